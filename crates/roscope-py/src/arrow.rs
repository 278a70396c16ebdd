//! Tables between Rust and Python, by one convention: the Arrow C data interface,
//! through the PyCapsule protocol (`__arrow_c_stream__`, `__arrow_c_array__`).
//!
//! - Rust to Python: an `ArrowTable` (the model's tables, the flow's results, the
//!   trace's batches); `pyarrow.table(obj)` or `pyarrow.record_batch(obj)` take its
//!   buffers without copying.
//! - Python to Rust: any object with `__arrow_c_stream__` (a pyarrow Table or
//!   RecordBatchReader, what DuckDB's `.arrow()` returns), read into the model's
//!   `Table` type by column name.
//!
//! Nothing else happens here: no logic, only conversion of buffers.

use std::ffi::CString;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::types::{Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int64Array, LargeListArray, LargeStringArray, RecordBatch, RecordBatchIterator, RecordBatchReader,
    StructArray, UInt64Array,
};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use roscope_ctf::columns::{Column, Kind};
use roscope_model::table::{Col, Data, Table};

fn arrow_err(e: ArrowError) -> PyErr {
    PyValueError::new_err(format!("Arrow data: {}", e))
}

/// Record batches made in Rust, handed to Python through the Arrow PyCapsule protocol.
#[pyclass(module = "roscope._core", frozen)]
pub struct ArrowTable {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl ArrowTable {
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        ArrowTable { schema, batches }
    }

    /// One table of the model's kind.
    pub fn from_table(t: Table) -> PyResult<Self> {
        let rows = t.rows;
        let mut fields = Vec::with_capacity(t.cols.len());
        let mut arrays = Vec::with_capacity(t.cols.len());
        for c in t.cols {
            let a = col_array(c, rows).map_err(arrow_err)?;
            fields.push(Field::new(a.0, a.1.data_type().clone(), true));
            arrays.push(a.1);
        }
        batch(fields, arrays, rows)
    }

    /// One batch of the trace reader's columns.
    pub fn from_columns(cols: Vec<Column>, rows: usize) -> PyResult<Self> {
        let mut fields = Vec::with_capacity(cols.len());
        let mut arrays = Vec::with_capacity(cols.len());
        for c in cols {
            let name = c.name.clone();
            let a = column_array(c, rows).map_err(arrow_err)?;
            fields.push(Field::new(name, a.data_type().clone(), true));
            arrays.push(a);
        }
        batch(fields, arrays, rows)
    }
}

fn batch(fields: Vec<Field>, arrays: Vec<ArrayRef>, rows: usize) -> PyResult<ArrowTable> {
    let schema = Arc::new(Schema::new(fields));
    let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
    let b = RecordBatch::try_new_with_options(schema.clone(), arrays, &opts).map_err(arrow_err)?;
    Ok(ArrowTable::new(schema, vec![b]))
}

fn capsule<'py, T: 'static + Send>(py: Python<'py>, value: T, name: &str) -> PyResult<Bound<'py, PyCapsule>> {
    let name = CString::new(name).expect("capsule names have no NUL");
    PyCapsule::new_bound(py, value, Some(name))
}

#[pymethods]
impl ArrowTable {
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// Bytes of the table's data (its buffers as far as its rows use them, as
    /// pyarrow's `Table.nbytes`).
    #[getter]
    fn nbytes(&self) -> PyResult<usize> {
        let mut n = 0;
        for b in &self.batches {
            for c in b.columns() {
                n += c.to_data().get_slice_memory_size().map_err(arrow_err)?;
            }
        }
        Ok(n)
    }

    /// The batches of `tables`, in order, as one table (no copy): chunks of one
    /// table of the model, stored by one insert. Their schemas must be equal.
    #[staticmethod]
    fn concat(tables: Vec<PyRef<'_, ArrowTable>>) -> PyResult<ArrowTable> {
        let Some(first) = tables.first() else {
            return Err(PyValueError::new_err("no table to concatenate"));
        };
        let schema = first.schema.clone();
        let mut batches = Vec::with_capacity(tables.iter().map(|t| t.batches.len()).sum());
        for t in &tables {
            if t.schema != schema {
                return Err(PyValueError::new_err("tables of different schemas cannot be concatenated"));
            }
            batches.extend(t.batches.iter().cloned());
        }
        Ok(ArrowTable { schema, batches })
    }

    /// The schema, as an `arrow_schema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let s = FFI_ArrowSchema::try_from(self.schema.as_ref()).map_err(arrow_err)?;
        capsule(py, s, "arrow_schema")
    }

    /// All batches, as an `arrow_array_stream` capsule (the requested schema is not
    /// applied: the consumer gets the table's own).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(&self, py: Python<'py>, requested_schema: Option<PyObject>) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new(self.batches.clone().into_iter().map(Ok), self.schema.clone());
        capsule(py, FFI_ArrowArrayStream::new(Box::new(reader)), "arrow_array_stream")
    }

    /// A one-batch table as (`arrow_schema`, `arrow_array`) capsules of a struct array.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(&self, py: Python<'py>, requested_schema: Option<PyObject>) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let [b] = self.batches.as_slice() else {
            return Err(PyValueError::new_err(format!("{} batches are not one array: read it as a stream", self.batches.len())));
        };
        let data = StructArray::from(b.clone()).into_data();
        let schema = FFI_ArrowSchema::try_from(DataType::Struct(self.schema.fields().clone())).map_err(arrow_err)?;
        let array = FFI_ArrowArray::new(&data);
        Ok(PyTuple::new_bound(py, [capsule(py, schema, "arrow_schema")?.into_any(), capsule(py, array, "arrow_array")?.into_any()]))
    }
}

fn nulls_of(valid: &[u8], rows: usize) -> Option<NullBuffer> {
    (!valid.is_empty()).then(|| NullBuffer::new(BooleanBuffer::collect_bool(rows, |i| valid[i] != 0)))
}

/// Values of 8-byte numbers in little-endian bytes, without copying when aligned.
fn scalars<T: ArrowNativeType>(bytes: Vec<u8>) -> ScalarBuffer<T> {
    let n = bytes.len() / std::mem::size_of::<T>();
    let b = Buffer::from_vec(bytes);
    let b = if b.as_ptr().align_offset(std::mem::align_of::<T>()) == 0 { b } else { Buffer::from_slice_ref(b.as_slice()) };
    ScalarBuffer::new(b, 0, n)
}

fn offsets(o: Vec<i64>) -> Result<OffsetBuffer<i64>, ArrowError> {
    if o.is_empty() || o.windows(2).any(|w| w[0] > w[1]) || o[0] < 0 {
        return Err(ArrowError::InvalidArgumentError("offsets do not grow from 0".into()));
    }
    Ok(OffsetBuffer::new(ScalarBuffer::from(o)))
}

fn col_array(c: Col, rows: usize) -> Result<(&'static str, ArrayRef), ArrowError> {
    let nulls = if c.any_null { nulls_of(&c.valid, rows) } else { None };
    let a: ArrayRef = match c.data {
        Data::I64(v) => Arc::new(Int64Array::try_new(ScalarBuffer::from(v), nulls)?),
        Data::U64(v) => Arc::new(UInt64Array::try_new(ScalarBuffer::from(v), nulls)?),
        Data::F64(v) => Arc::new(Float64Array::try_new(ScalarBuffer::from(v), nulls)?),
        Data::Str(b, o) => Arc::new(LargeStringArray::try_new(offsets(o)?, Buffer::from_vec(b), nulls)?),
    };
    Ok((c.name, a))
}

fn column_array(c: Column, rows: usize) -> Result<ArrayRef, ArrowError> {
    let nulls = nulls_of(&c.validity, rows);
    let list = |dt: DataType, child: ArrayRef, o: Vec<i64>, nulls| -> Result<ArrayRef, ArrowError> {
        Ok(Arc::new(LargeListArray::try_new(Arc::new(Field::new_list_field(dt, true)), offsets(o)?, child, nulls)?))
    };
    Ok(match c.kind {
        Kind::I64 => Arc::new(Int64Array::try_new(scalars(c.values), nulls)?),
        Kind::U64 => Arc::new(UInt64Array::try_new(scalars(c.values), nulls)?),
        Kind::F64 => Arc::new(Float64Array::try_new(scalars(c.values), nulls)?),
        Kind::Str | Kind::Json => Arc::new(LargeStringArray::try_new(offsets(c.offsets)?, Buffer::from_vec(c.values), nulls)?),
        Kind::ListI64 => list(DataType::Int64, Arc::new(Int64Array::new(scalars(c.values), None)), c.offsets, nulls)?,
        Kind::ListU64 => list(DataType::UInt64, Arc::new(UInt64Array::new(scalars(c.values), None)), c.offsets, nulls)?,
        Kind::ListF64 => list(DataType::Float64, Arc::new(Float64Array::new(scalars(c.values), None)), c.offsets, nulls)?,
    })
}

/// Reads an object with `__arrow_c_stream__` (a pyarrow Table or RecordBatchReader).
fn read_stream(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let cap = obj.call_method0("__arrow_c_stream__")?;
    let cap = cap.downcast::<PyCapsule>()?;
    if cap.name()?.map(|n| n.to_bytes()) != Some(b"arrow_array_stream") {
        return Err(PyValueError::new_err("__arrow_c_stream__ did not return an arrow_array_stream capsule"));
    }
    let ptr = cap.pointer() as *mut FFI_ArrowArrayStream;
    // SAFETY: the capsule holds a valid stream (PyCapsule protocol); `from_raw` moves
    // it out and leaves a released one behind, which the capsule's destructor skips.
    unsafe { RecordBatchStreamReader::from_raw(ptr) }.map_err(arrow_err)
}

/// Appends validity of `n` more rows to `c` (`nulls` None: all valid).
fn push_valid(c: &mut Col, before: usize, n: usize, nulls: Option<&NullBuffer>) {
    match nulls.filter(|x| x.null_count() > 0) {
        Some(x) => {
            if !c.any_null {
                c.any_null = true;
                c.valid = vec![1; before];
            }
            c.valid.extend(x.iter().map(|v| v as u8));
        }
        None if c.any_null => c.valid.extend(std::iter::repeat_n(1u8, n)),
        None => {}
    }
}

fn empty_col(name: &'static str, dt: &DataType, table: &str) -> PyResult<Col> {
    let data = match dt {
        DataType::Int64 | DataType::Int32 | DataType::UInt32 => Data::I64(Vec::new()),
        DataType::UInt64 => Data::U64(Vec::new()),
        DataType::Float64 => Data::F64(Vec::new()),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Data::Str(Vec::new(), vec![0]),
        other => return Err(PyValueError::new_err(format!("{}.{}: Arrow type {} is not read", table, name, other))),
    };
    Ok(Col { name, data, valid: Vec::new(), any_null: false })
}

fn append(c: &mut Col, a: &dyn Array) {
    match (&mut c.data, a.data_type()) {
        (Data::I64(v), DataType::Int64) => v.extend_from_slice(a.as_primitive::<Int64Type>().values()),
        (Data::I64(v), DataType::Int32) => v.extend(a.as_primitive::<Int32Type>().values().iter().map(|&x| x as i64)),
        (Data::I64(v), DataType::UInt32) => v.extend(a.as_primitive::<UInt32Type>().values().iter().map(|&x| x as i64)),
        (Data::U64(v), DataType::UInt64) => v.extend_from_slice(a.as_primitive::<UInt64Type>().values()),
        (Data::F64(v), DataType::Float64) => v.extend_from_slice(a.as_primitive::<Float64Type>().values()),
        (Data::Str(b, o), dt) => {
            let mut push = |s: Option<&str>| {
                b.extend_from_slice(s.unwrap_or("").as_bytes());
                o.push(b.len() as i64);
            };
            match dt {
                DataType::Utf8 => a.as_string::<i32>().iter().for_each(&mut push),
                DataType::LargeUtf8 => a.as_string::<i64>().iter().for_each(&mut push),
                _ => a.as_string_view().iter().for_each(&mut push),
            }
        }
        _ => unreachable!("column types are fixed by the stream's schema"),
    }
}

/// A table of the model read from an Arrow stream: the columns `cols` only.
pub fn table_from_stream(name: &'static str, cols: &[&'static str], obj: &Bound<'_, PyAny>) -> PyResult<Table> {
    let reader = read_stream(obj)?;
    let schema = reader.schema();
    let mut idx = Vec::with_capacity(cols.len());
    let mut out = Vec::with_capacity(cols.len());
    for &c in cols {
        let Ok(i) = schema.index_of(c) else {
            return Err(PyValueError::new_err(format!("table {} has no column {}", name, c)));
        };
        idx.push(i);
        out.push(empty_col(c, schema.field(i).data_type(), name)?);
    }
    let mut rows = 0;
    for b in reader {
        let b = b.map_err(arrow_err)?;
        for (c, &i) in out.iter_mut().zip(&idx) {
            let a = b.column(i);
            push_valid(c, rows, a.len(), a.logical_nulls().as_ref());
            append(c, a.as_ref());
        }
        rows += b.num_rows();
    }
    Ok(Table { name, cols: out, rows })
}

/// Reads an Arrow stream batch by batch (memory holds one batch): `f` gets, per
/// batch, the columns `cols` as int64 slices (int64 without nulls, else an error
/// naming `what` and the column).
pub fn each_i64_batch(
    what: &str,
    cols: &[&str],
    obj: &Bound<'_, PyAny>,
    mut f: impl FnMut(&[&[i64]]) -> Result<(), String>,
) -> PyResult<()> {
    let reader = read_stream(obj)?;
    let schema = reader.schema();
    let mut idx = Vec::with_capacity(cols.len());
    for &c in cols {
        match schema.index_of(c) {
            Ok(i) if schema.field(i).data_type() == &DataType::Int64 => idx.push(i),
            _ => return Err(PyValueError::new_err(format!("{}: the stream has no int64 column {}", what, c))),
        }
    }
    for b in reader {
        let b = b.map_err(arrow_err)?;
        let mut data: Vec<&[i64]> = Vec::with_capacity(idx.len());
        for (&i, &c) in idx.iter().zip(cols) {
            let a = b.column(i);
            if a.logical_null_count() > 0 {
                return Err(PyValueError::new_err(format!("{}: column {} has nulls", what, c)));
            }
            data.push(a.as_primitive::<Int64Type>().values());
        }
        f(&data).map_err(PyValueError::new_err)?;
    }
    Ok(())
}

/// The columns of an Arrow stream (all of them, in order; int64 or int32), read
/// whole, nulls as None: small results (a few values per block of ids, a lookup's
/// row); `what` names the read in errors.
pub fn i64_columns(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<Option<i64>>>> {
    let reader = read_stream(obj)?;
    let schema = reader.schema();
    let mut out: Vec<Vec<Option<i64>>> = vec![Vec::new(); schema.fields().len()];
    for f in schema.fields() {
        if !matches!(f.data_type(), DataType::Int64 | DataType::Int32) {
            return Err(PyValueError::new_err(format!("{}: column {} is {}, not an integer", what, f.name(), f.data_type())));
        }
    }
    for b in reader {
        let b = b.map_err(arrow_err)?;
        for (c, a) in out.iter_mut().zip(b.columns()) {
            let nulls = a.logical_nulls();
            let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
            match a.data_type() {
                DataType::Int32 => {
                    c.extend(a.as_primitive::<Int32Type>().values().iter().enumerate().map(|(i, &v)| valid(i).then_some(v as i64)))
                }
                _ => c.extend(a.as_primitive::<Int64Type>().values().iter().enumerate().map(|(i, &v)| valid(i).then_some(v))),
            }
        }
    }
    Ok(out)
}
