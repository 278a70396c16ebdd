//! Small typed column builders for the model's tables (their columns come
//! from `crate::schema`), finished into the same Arrow-layout `Column`s the
//! CTF reader hands to Python.

use roscope_ctf::columns::{Column, Kind};

use crate::schema::{ColType, TableSpec};

pub enum Data {
    I64(Vec<i64>),
    U64(Vec<u64>),
    F64(Vec<f64>),
    Str(Vec<u8>, Vec<i64>),
}

pub struct Col {
    pub name: &'static str,
    pub data: Data,
    pub valid: Vec<u8>,
    pub any_null: bool,
}

impl Col {
    /// Records the validity of the value just pushed; the byte vector is only
    /// kept from the first null on (earlier rows are valid).
    #[inline]
    fn mark(&mut self, valid: bool) {
        let n = self.len();
        if !valid && !self.any_null {
            self.any_null = true;
            self.valid = Vec::with_capacity(self.capacity());
            self.valid.resize(n - 1, 1);
        }
        if self.any_null {
            self.valid.push(valid as u8);
        }
    }

    /// Rows the column holds room for.
    fn capacity(&self) -> usize {
        match &self.data {
            Data::I64(v) => v.capacity(),
            Data::U64(v) => v.capacity(),
            Data::F64(v) => v.capacity(),
            Data::Str(_, o) => o.capacity().saturating_sub(1),
        }
    }

    fn len(&self) -> usize {
        match &self.data {
            Data::I64(v) => v.len(),
            Data::U64(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::Str(_, o) => o.len() - 1,
        }
    }
}

pub struct Table {
    pub name: &'static str,
    pub cols: Vec<Col>,
    pub rows: usize,
}

impl Table {
    /// An empty table with the columns of `spec` (a table of `crate::schema`).
    pub fn new(spec: &'static TableSpec) -> Self {
        Self::empty(spec.name, spec.columns.iter().map(|c| (c.name, c.ty)))
    }

    /// An empty table with the columns of `spec`, with room for `rows` rows:
    /// a chunk's columns become its Arrow buffers as they are, so a table of a
    /// known number of records holds no spare capacity (nor copies growing).
    pub fn with_rows(spec: &'static TableSpec, rows: usize) -> Self {
        let mut t = Self::new(spec);
        for c in &mut t.cols {
            match &mut c.data {
                Data::I64(v) => v.reserve_exact(rows),
                Data::U64(v) => v.reserve_exact(rows),
                Data::F64(v) => v.reserve_exact(rows),
                Data::Str(_, o) => o.reserve_exact(rows),
            }
        }
        t
    }

    /// Room for `rows` more rows in every column (text: their offsets, and
    /// `text_bytes` bytes), so that a table filled to a known size does not
    /// grow by doubling.
    pub fn reserve_rows(&mut self, rows: usize, text_bytes: usize) {
        for c in &mut self.cols {
            match &mut c.data {
                Data::I64(v) => v.reserve_exact(rows),
                Data::U64(v) => v.reserve_exact(rows),
                Data::F64(v) => v.reserve_exact(rows),
                Data::Str(b, o) => {
                    o.reserve_exact(rows);
                    b.reserve_exact(text_bytes);
                }
            }
        }
    }

    /// An empty table with ad-hoc columns (name, kind: `i` int64, `u` uint64,
    /// `f` float64, `s` text), for tables the schema does not declare (e.g.
    /// partial tables in tests). The model's tables use `new`.
    pub fn with_columns(name: &'static str, spec: &[(&'static str, char)]) -> Self {
        let ty = |k: char| match k {
            'i' => ColType::BigInt,
            'u' => ColType::UBigInt,
            'f' => ColType::Double,
            's' => ColType::Varchar,
            _ => panic!("unknown column kind {}", k),
        };
        Self::empty(name, spec.iter().map(|&(n, k)| (n, ty(k))))
    }

    fn empty(name: &'static str, cols: impl Iterator<Item = (&'static str, ColType)>) -> Self {
        let cols = cols
            .map(|(n, ty)| Col {
                name: n,
                data: match ty {
                    ColType::BigInt => Data::I64(Vec::new()),
                    ColType::UBigInt => Data::U64(Vec::new()),
                    ColType::Double => Data::F64(Vec::new()),
                    ColType::Varchar => Data::Str(Vec::new(), vec![0]),
                    ColType::HugeInt => panic!("{}.{}: HUGEINT columns are made by SQL, not by Table", name, n),
                },
                valid: Vec::new(),
                any_null: false,
            })
            .collect();
        Table { name, cols, rows: 0 }
    }

    /// Starts a row: values are then set column by column, in order, with the
    /// `put_*` methods of `Row`.
    pub fn row(&mut self) -> Row<'_> {
        self.rows += 1;
        Row { t: self, k: 0 }
    }

    pub fn finish(self) -> (String, Vec<Column>) {
        let cols = self
            .cols
            .into_iter()
            .map(|c| {
                let validity = if c.any_null { c.valid } else { Vec::new() };
                debug_assert!(validity.is_empty() || validity.len() == self.rows);
                match c.data {
                    Data::I64(v) => Column {
                        name: c.name.into(),
                        kind: Kind::I64,
                        values: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                        offsets: vec![],
                        validity,
                    },
                    Data::U64(v) => Column {
                        name: c.name.into(),
                        kind: Kind::U64,
                        values: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                        offsets: vec![],
                        validity,
                    },
                    Data::F64(v) => Column {
                        name: c.name.into(),
                        kind: Kind::F64,
                        values: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                        offsets: vec![],
                        validity,
                    },
                    Data::Str(b, o) => Column { name: c.name.into(), kind: Kind::Str, values: b, offsets: o, validity },
                }
            })
            .collect();
        (self.name.to_string(), cols)
    }
}

pub struct Row<'a> {
    t: &'a mut Table,
    k: usize,
}

impl<'a> Row<'a> {
    fn col(&mut self) -> &mut Col {
        let k = self.k;
        self.k += 1;
        &mut self.t.cols[k]
    }
    pub fn i(mut self, v: Option<i64>) -> Self {
        let c = self.col();
        if let Data::I64(d) = &mut c.data {
            d.push(v.unwrap_or(0));
        } else {
            panic!("column {} is not int64", c.name);
        }
        c.mark(v.is_some());
        self
    }
    pub fn u(mut self, v: Option<u64>) -> Self {
        let c = self.col();
        if let Data::U64(d) = &mut c.data {
            d.push(v.unwrap_or(0));
        } else {
            panic!("column {} is not uint64", c.name);
        }
        c.mark(v.is_some());
        self
    }
    pub fn f(mut self, v: Option<f64>) -> Self {
        let c = self.col();
        if let Data::F64(d) = &mut c.data {
            d.push(v.unwrap_or(0.0));
        } else {
            panic!("column {} is not float64", c.name);
        }
        c.mark(v.is_some());
        self
    }
    pub fn s(mut self, v: Option<&str>) -> Self {
        let c = self.col();
        if let Data::Str(b, o) = &mut c.data {
            if let Some(s) = v {
                b.extend_from_slice(s.as_bytes());
            }
            o.push(b.len() as i64);
        } else {
            panic!("column {} is not a string", c.name);
        }
        c.mark(v.is_some());
        self
    }
    pub fn done(self) {
        debug_assert_eq!(self.k, self.t.cols.len(), "row of table {} is incomplete", self.t.name);
    }
}
