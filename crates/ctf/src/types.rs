//! Field types resolved from TSDL: concrete sizes, alignments and byte orders,
//! with sequence lengths and variant tags linked to the registers that hold
//! their values at decoding time.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use crate::tsdl::{Attr, Dim, EnumMapping, FieldDecl, TypeSpec, Value};

/// What an integer means to the reader, besides its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    None,
    /// The event header's `id`: selects the event class.
    EventId,
    /// Mapped to a clock: updates the stream's clock (event header only).
    Clock,
}

#[derive(Debug, Clone)]
pub struct IntTy {
    pub size: u32,
    pub align: u32,
    pub signed: bool,
    pub le: bool,
    pub base: u8,
    /// `encoding = UTF8|ASCII`: arrays/sequences of it are text.
    pub text: bool,
    /// Name of the clock this integer is mapped to, if any.
    pub clock: Option<String>,
    pub role: Role,
    /// Register where the decoded value is kept for sequences/variants.
    pub reg: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct FloatTy {
    pub exp_dig: u32,
    pub mant_dig: u32,
    pub align: u32,
    pub le: bool,
}

#[derive(Debug, Clone)]
pub struct EnumTy {
    pub int: IntTy,
    /// (low, high, label), in declaration order.
    pub mappings: Arc<Vec<(i128, i128, String)>>,
}

impl EnumTy {
    /// The first declared label whose range holds `v`.
    pub fn label(&self, v: i128) -> Option<&str> {
        self.mappings.iter().find(|(lo, hi, _)| *lo <= v && v <= *hi).map(|(_, _, l)| l.as_str())
    }
}

#[derive(Debug, Clone)]
pub struct Field {
    /// Name as written in the metadata.
    pub raw: String,
    /// Name with one leading underscore removed (CTF 1.8 7.3.2).
    pub name: String,
    pub ty: Ty,
}

#[derive(Debug, Clone)]
pub struct StructTy {
    pub fields: Vec<Field>,
    pub align: u32,
}

#[derive(Debug, Clone)]
pub struct VariantTy {
    pub tag: String,
    pub options: Vec<Field>,
    /// Linked: register holding the tag value, and (low, high, option index).
    pub reg: u32,
    pub ranges: Vec<(i128, i128, u32)>,
    pub tag_signed: bool,
}

#[derive(Debug, Clone)]
pub enum Ty {
    Int(IntTy),
    Float(FloatTy),
    Enum(EnumTy),
    Str,
    Struct(StructTy),
    Array { elem: Box<Ty>, len: u64, text: bool },
    Seq { elem: Box<Ty>, len_ref: String, reg: u32, text: bool },
    Variant(Box<VariantTy>),
}

impl Ty {
    pub fn align(&self) -> u32 {
        match self {
            Ty::Int(i) => i.align,
            Ty::Float(f) => f.align,
            Ty::Enum(e) => e.int.align,
            Ty::Str => 8,
            Ty::Struct(s) => s.align,
            Ty::Array { elem, .. } | Ty::Seq { elem, .. } => elem.align(),
            Ty::Variant(_) => 1,
        }
    }
}

pub fn strip_underscore(s: &str) -> String {
    s.strip_prefix('_').unwrap_or(s).to_string()
}

/// Resolves type specifiers into types, keeping the aliases and named
/// compound types declared so far.
pub struct Resolver {
    pub native_le: bool,
    aliases: HashMap<String, Ty>,
    structs: HashMap<String, Ty>,
    enums: HashMap<String, Ty>,
    variants: HashMap<String, Ty>,
    pub file: String,
}

pub type RResult<T> = std::result::Result<T, (u32, String)>;

fn int_attr(a: &Attr) -> RResult<i128> {
    match &a.value {
        Value::Int(v) => Ok(*v),
        Value::Path(p) if p == "true" || p == "TRUE" => Ok(1),
        Value::Path(p) if p == "false" || p == "FALSE" => Ok(0),
        _ => Err((a.line, format!("attribute '{}' must be an integer", a.key))),
    }
}

fn path_attr(a: &Attr) -> RResult<String> {
    match &a.value {
        Value::Path(p) => Ok(p.clone()),
        Value::Str(s) => Ok(s.clone()),
        Value::Int(v) => Ok(v.to_string()),
        _ => Err((a.line, format!("attribute '{}' has an unexpected value", a.key))),
    }
}

pub fn byte_order(a: &Attr, native_le: bool) -> RResult<bool> {
    let p = path_attr(a)?;
    match p.as_str() {
        "le" | "little" => Ok(true),
        "be" | "big" | "network" => Ok(false),
        "native" => Ok(native_le),
        other => Err((a.line, format!("unknown byte_order '{}'", other))),
    }
}

impl Resolver {
    pub fn new(native_le: bool, file: &str) -> Self {
        Resolver {
            native_le,
            aliases: HashMap::new(),
            structs: HashMap::new(),
            enums: HashMap::new(),
            variants: HashMap::new(),
            file: file.to_string(),
        }
    }

    pub fn add_alias(&mut self, name: &str, spec: &TypeSpec, dims: &[Dim], line: u32) -> RResult<()> {
        let mut ty = self.resolve(spec, line)?;
        for d in dims.iter().rev() {
            ty = wrap_dim(ty, d);
        }
        self.aliases.insert(name.to_string(), ty);
        Ok(())
    }

    /// A top-level `struct x {...};`, `enum x : ... {...};` or `variant x {...};`.
    pub fn add_named(&mut self, spec: &TypeSpec, line: u32) -> RResult<()> {
        self.resolve(spec, line).map(|_| ())
    }

    pub fn resolve(&mut self, spec: &TypeSpec, line: u32) -> RResult<Ty> {
        match spec {
            TypeSpec::Integer(attrs) => Ok(Ty::Int(self.integer(attrs, line)?)),
            TypeSpec::Float(attrs) => {
                let mut f = FloatTy { exp_dig: 0, mant_dig: 0, align: 8, le: self.native_le };
                for a in attrs {
                    match a.key.as_str() {
                        "exp_dig" => f.exp_dig = int_attr(a)? as u32,
                        "mant_dig" => f.mant_dig = int_attr(a)? as u32,
                        "align" => f.align = int_attr(a)? as u32,
                        "byte_order" => f.le = byte_order(a, self.native_le)?,
                        _ => {}
                    }
                }
                if !((f.exp_dig == 8 && f.mant_dig == 24) || (f.exp_dig == 11 && f.mant_dig == 53)) {
                    return Err((
                        line,
                        format!(
                            "floating point with exp_dig={} mant_dig={} is not supported (only 32- and 64-bit IEEE 754)",
                            f.exp_dig, f.mant_dig
                        ),
                    ));
                }
                check_align(f.align, line)?;
                Ok(Ty::Float(f))
            }
            TypeSpec::String(_) => Ok(Ty::Str),
            TypeSpec::Enum { name, container, mappings } => {
                let Some(maps) = mappings else {
                    let n = name.as_deref().unwrap_or("");
                    return self.enums.get(n).cloned().ok_or((line, format!("unknown enum '{}'", n)));
                };
                let int = match container {
                    Some(c) => match self.resolve(c, line)? {
                        Ty::Int(i) => i,
                        _ => return Err((line, "enum container type is not an integer".into())),
                    },
                    None => match self.aliases.get("int") {
                        Some(Ty::Int(i)) => i.clone(),
                        _ => return Err((line, "enum without a container type, and no 'int' alias".into())),
                    },
                };
                let ty = Ty::Enum(EnumTy { int, mappings: Arc::new(enum_ranges(maps)) });
                if let Some(n) = name {
                    self.enums.insert(n.clone(), ty.clone());
                }
                Ok(ty)
            }
            TypeSpec::Struct { name, fields, align } => {
                let Some(fields) = fields else {
                    let n = name.as_deref().unwrap_or("");
                    let mut t = self.structs.get(n).cloned().ok_or((line, format!("unknown struct '{}'", n)))?;
                    if let (Some(a), Ty::Struct(s)) = (align, &mut t) {
                        s.align = s.align.max(*a as u32);
                    }
                    return Ok(t);
                };
                let fs = self.fields(fields)?;
                // align(N) is in bits, like every CTF alignment.
                let min_align = align.map(|a| a as u32).unwrap_or(1);
                let al = fs.iter().map(|f| f.ty.align()).fold(min_align, u32::max);
                let ty = Ty::Struct(StructTy { fields: fs, align: al });
                if let Some(n) = name {
                    self.structs.insert(n.clone(), ty.clone());
                }
                Ok(ty)
            }
            TypeSpec::Variant { name, tag, options } => {
                let mut base = match options {
                    Some(opts) => {
                        let fs = self.fields(opts)?;
                        let v = VariantTy { tag: String::new(), options: fs, reg: u32::MAX, ranges: vec![], tag_signed: false };
                        if let Some(n) = name {
                            self.variants.insert(n.clone(), Ty::Variant(Box::new(v.clone())));
                        }
                        v
                    }
                    None => {
                        let n = name.as_deref().unwrap_or("");
                        match self.variants.get(n) {
                            Some(Ty::Variant(v)) => (**v).clone(),
                            _ => return Err((line, format!("unknown variant '{}'", n))),
                        }
                    }
                };
                if let Some(t) = tag {
                    base.tag = t.clone();
                }
                Ok(Ty::Variant(Box::new(base)))
            }
            TypeSpec::Named(n) => self.aliases.get(n).cloned().ok_or((line, format!("unknown type '{}'", n))),
        }
    }

    fn integer(&self, attrs: &[Attr], line: u32) -> RResult<IntTy> {
        let mut t =
            IntTy { size: 0, align: 0, signed: false, le: self.native_le, base: 10, text: false, clock: None, role: Role::None, reg: None };
        for a in attrs {
            match a.key.as_str() {
                "size" => t.size = int_attr(a)? as u32,
                "align" => t.align = int_attr(a)? as u32,
                "signed" => t.signed = int_attr(a)? != 0,
                "byte_order" => t.le = byte_order(a, self.native_le)?,
                "base" => {
                    t.base = match &a.value {
                        Value::Int(v) => *v as u8,
                        Value::Path(p) => match p.as_str() {
                            "decimal" | "dec" | "d" | "i" | "u" => 10,
                            "hexadecimal" | "hex" | "x" | "X" | "p" => 16,
                            "octal" | "oct" | "o" => 8,
                            "binary" | "b" => 2,
                            other => return Err((a.line, format!("unknown integer base '{}'", other))),
                        },
                        _ => return Err((a.line, "bad integer base".into())),
                    }
                }
                "encoding" => {
                    let e = path_attr(a)?;
                    t.text = matches!(e.as_str(), "UTF8" | "utf8" | "ASCII" | "ascii");
                }
                "map" => {
                    let p = path_attr(a)?;
                    let parts: Vec<&str> = p.split('.').collect();
                    if parts.len() == 3 && parts[0] == "clock" && parts[2] == "value" {
                        t.clock = Some(parts[1].to_string());
                    } else {
                        return Err((a.line, format!("unsupported integer mapping '{}'", p)));
                    }
                }
                _ => {}
            }
        }
        if t.size == 0 || t.size > 64 {
            return Err((line, format!("integer size {} is not supported (1 to 64 bits)", t.size)));
        }
        if t.align == 0 {
            t.align = if t.size.is_multiple_of(8) { 8 } else { 1 };
        }
        check_align(t.align, line)?;
        Ok(t)
    }

    fn fields(&mut self, decls: &[FieldDecl]) -> RResult<Vec<Field>> {
        let mut out: Vec<Field> = Vec::with_capacity(decls.len());
        for d in decls {
            let mut ty = self.resolve(&d.ty, d.line)?;
            for dim in d.dims.iter().rev() {
                ty = wrap_dim(ty, dim);
            }
            out.push(Field { raw: d.name.clone(), name: strip_underscore(&d.name), ty });
        }
        // Aliases are copied where they are used, so a few lines of metadata
        // can describe an exponentially large type: refuse those.
        let nodes = out.iter().fold(1u64, |n, f| n.saturating_add(type_nodes(&f.ty, MAX_TYPE_NODES)));
        if nodes > MAX_TYPE_NODES {
            let line = decls.first().map(|d| d.line).unwrap_or(0);
            return Err((line, format!("structure or variant too large (more than {} nested fields)", MAX_TYPE_NODES)));
        }
        Ok(out)
    }
}

/// Largest number of type nodes (fields, elements, options) in one type.
const MAX_TYPE_NODES: u64 = 1 << 16;

/// Number of type nodes in `ty` (arrays count their element type once),
/// counting stops a little past `cap`.
fn type_nodes(ty: &Ty, cap: u64) -> u64 {
    match ty {
        Ty::Struct(s) => s.fields.iter().fold(1u64, |n, f| if n > cap { n } else { n.saturating_add(type_nodes(&f.ty, cap)) }),
        Ty::Variant(v) => v.options.iter().fold(1u64, |n, f| if n > cap { n } else { n.saturating_add(type_nodes(&f.ty, cap)) }),
        Ty::Array { elem, .. } | Ty::Seq { elem, .. } => 1 + type_nodes(elem, cap),
        _ => 1,
    }
}

fn check_align(a: u32, line: u32) -> RResult<()> {
    if a == 0 || (a & (a - 1)) != 0 {
        return Err((line, format!("alignment {} is not a power of two", a)));
    }
    Ok(())
}

fn wrap_dim(elem: Ty, d: &Dim) -> Ty {
    let text = matches!(&elem, Ty::Int(i) if i.text && i.size == 8 && i.align % 8 == 0);
    match d {
        Dim::Fixed(n) => Ty::Array { elem: Box::new(elem), len: *n, text },
        Dim::Ref(r) => Ty::Seq { elem: Box::new(elem), len_ref: r.clone(), reg: u32::MAX, text },
    }
}

fn enum_ranges(maps: &[EnumMapping]) -> Vec<(i128, i128, String)> {
    let mut next: i128 = 0;
    let mut out = Vec::with_capacity(maps.len());
    for m in maps {
        let (lo, hi) = m.range.unwrap_or((next, next));
        out.push((lo, hi, m.label.clone()));
        next = hi.saturating_add(1);
    }
    out
}

/// Collects the raw names that sequences and variants refer to (their last
/// path component), so that only fields with those names get registers.
pub fn collect_refs(ty: &Ty, out: &mut HashSet<String>) {
    match ty {
        Ty::Struct(s) => s.fields.iter().for_each(|f| collect_refs(&f.ty, out)),
        Ty::Array { elem, .. } => collect_refs(elem, out),
        Ty::Seq { elem, len_ref, .. } => {
            out.insert(len_ref.rsplit('.').next().unwrap_or(len_ref).to_string());
            collect_refs(elem, out);
        }
        Ty::Variant(v) => {
            out.insert(v.tag.rsplit('.').next().unwrap_or(&v.tag).to_string());
            v.options.iter().for_each(|f| collect_refs(&f.ty, out));
        }
        _ => {}
    }
}

/// One name visible to later fields while linking.
#[derive(Clone)]
struct Entry {
    raw: String,
    reg: Option<u32>,
    enum_maps: Option<Arc<Vec<(i128, i128, String)>>>,
    signed: bool,
    /// For structs: their own fields' entries, for dotted references.
    children: Option<Rc<Vec<Entry>>>,
}

/// Links sequences and variants to registers, scope by scope, in the order
/// the scopes are decoded.
pub struct Linker {
    pub refs: HashSet<String>,
    pub nregs: u32,
    /// Finished scopes, by their absolute prefix (e.g. "stream.event.header").
    scopes: Vec<(String, Rc<Vec<Entry>>)>,
    /// Absolute name of the scope being linked.
    current: String,
}

impl Linker {
    pub fn new(refs: HashSet<String>) -> Self {
        Linker { refs, nregs: 0, scopes: Vec::new(), current: String::new() }
    }

    /// Links a scope's type; `prefix` is its absolute name. `role_of` gives the
    /// role of an integer at the top level of the scope's structures.
    pub fn link_scope(&mut self, prefix: &str, ty: &mut Ty, header: bool) -> std::result::Result<(), String> {
        let mut frames: Vec<Vec<Entry>> = vec![Vec::new()];
        self.current = prefix.to_string();
        self.link(ty, &mut frames, header)?;
        let top = frames.pop().unwrap_or_default();
        // A scope is a struct: its fields are the scope's top-level entries.
        let entries = match top.into_iter().next() {
            Some(Entry { children: Some(c), .. }) => c,
            _ => Rc::new(Vec::new()),
        };
        self.scopes.push((prefix.to_string(), entries));
        Ok(())
    }

    /// Forgets the scopes after the first `n` (used between event classes).
    pub fn truncate_scopes(&mut self, n: usize) {
        self.scopes.truncate(n);
    }
    pub fn scope_count(&self) -> usize {
        self.scopes.len()
    }

    fn new_reg(&mut self) -> u32 {
        self.nregs += 1;
        self.nregs - 1
    }

    fn link(&mut self, ty: &mut Ty, frames: &mut Vec<Vec<Entry>>, header: bool) -> std::result::Result<Entry, String> {
        // The entry describing this value to later siblings (name filled by caller).
        let mut entry = Entry { raw: String::new(), reg: None, enum_maps: None, signed: false, children: None };
        match ty {
            Ty::Int(i) => {
                entry.signed = i.signed;
                entry.reg = i.reg;
                if header && i.clock.is_some() {
                    i.role = Role::Clock;
                }
            }
            Ty::Enum(e) => {
                entry.signed = e.int.signed;
                entry.enum_maps = Some(e.mappings.clone());
            }
            Ty::Float(_) | Ty::Str => {}
            Ty::Struct(s) => {
                frames.push(Vec::new());
                for f in s.fields.iter_mut() {
                    let wants_reg = self.refs.contains(&f.raw);
                    match &mut f.ty {
                        Ty::Int(i) => {
                            if wants_reg {
                                i.reg = Some(self.new_reg());
                            }
                            if header && f.name == "id" {
                                i.role = Role::EventId;
                            }
                        }
                        Ty::Enum(e) => {
                            if wants_reg {
                                e.int.reg = Some(self.new_reg());
                            }
                            if header && f.name == "id" {
                                e.int.role = Role::EventId;
                            }
                            if header && e.int.clock.is_some() {
                                e.int.role = Role::Clock;
                            }
                        }
                        _ => {}
                    }
                    let mut e = self.link(&mut f.ty, frames, header)?;
                    if let Ty::Enum(en) = &f.ty {
                        e.reg = en.int.reg;
                    }
                    e.raw = f.raw.clone();
                    frames.last_mut().unwrap().push(e);
                }
                let mine = frames.pop().unwrap();
                entry.children = Some(Rc::new(mine));
            }
            Ty::Array { elem, .. } => {
                // Fields inside array elements are not visible outside.
                frames.push(Vec::new());
                self.link(elem, frames, header)?;
                frames.pop();
            }
            Ty::Seq { elem, len_ref, reg, .. } => {
                let e = self.lookup(len_ref, frames)?;
                *reg = e.reg.ok_or_else(|| format!("sequence length '{}' is not an integer field", len_ref))?;
                frames.push(Vec::new());
                self.link(elem, frames, header)?;
                frames.pop();
            }
            Ty::Variant(v) => {
                let e = self.lookup(&v.tag, frames)?;
                let maps = e.enum_maps.clone().ok_or_else(|| format!("variant tag '{}' is not an enumeration", v.tag))?;
                v.reg = e.reg.ok_or_else(|| format!("variant tag '{}' has no value", v.tag))?;
                v.tag_signed = e.signed;
                v.ranges.clear();
                for (lo, hi, label) in maps.iter() {
                    let idx = v.options.iter().position(|o| o.raw == *label || o.name == *label || o.raw == format!("_{}", label));
                    if let Some(idx) = idx {
                        v.ranges.push((*lo, *hi, idx as u32));
                    }
                }
                for o in v.options.iter_mut() {
                    frames.push(Vec::new());
                    self.link(&mut o.ty, frames, header)?;
                    frames.pop();
                }
            }
        }
        Ok(entry)
    }

    fn lookup(&self, path: &str, frames: &[Vec<Entry>]) -> std::result::Result<Entry, String> {
        let parts: Vec<&str> = path.split('.').collect();
        // Absolute references.
        for (prefix, entries) in self.scopes.iter().rev() {
            let pp: Vec<&str> = prefix.split('.').collect();
            if parts.len() > pp.len() && parts[..pp.len()] == pp[..] {
                if let Some(e) = descend(entries, &parts[pp.len()..]) {
                    return Ok(e);
                }
            }
        }
        // Absolute reference into the scope being linked.
        let cp: Vec<&str> = self.current.split('.').collect();
        if !self.current.is_empty() && parts.len() > cp.len() && parts[..cp.len()] == cp[..] && frames.len() > 1 {
            if let Some(e) = descend(&frames[1], &parts[cp.len()..]) {
                return Ok(e);
            }
        }
        // Relative: innermost frame first, then enclosing frames, then earlier scopes.
        for f in frames.iter().rev() {
            if let Some(e) = descend(f, &parts) {
                return Ok(e);
            }
        }
        for (_, entries) in self.scopes.iter().rev() {
            if let Some(e) = descend(entries, &parts) {
                return Ok(e);
            }
        }
        Err(format!("reference to unknown field '{}'", path))
    }
}

fn descend(entries: &[Entry], parts: &[&str]) -> Option<Entry> {
    let first = parts.first()?;
    let e = entries.iter().rev().find(|e| e.raw == *first || strip_underscore(&e.raw) == *first)?;
    if parts.len() == 1 {
        Some(e.clone())
    } else {
        descend(e.children.as_ref()?, &parts[1..])
    }
}

/// A flattened decoding program: what `Ty` trees of fixed shape become, so
/// that the hot loop runs without recursion. Values land on the tape exactly
/// as decoding the tree would put them.
#[derive(Debug, Clone)]
pub enum Op {
    Align(u32),
    Int {
        size: u32,
        align: u32,
        le: bool,
        signed: bool,
        role: Role,
        reg: Option<u32>,
    },
    F32 {
        align: u32,
        le: bool,
    },
    F64 {
        align: u32,
        le: bool,
    },
    Str,
    Text(u64),
    /// A variant: its options compiled too (the event header's compact and
    /// extended forms, read for every event).
    Variant(Box<VariantOp>),
    /// A sequence of elements of fixed shape: the element compiled once.
    Seq(Box<SeqOp>),
    /// Consecutive whole-byte little-endian integers and text arrays of at
    /// most byte alignment: at a byte-aligned position their places are fixed,
    /// and they are read with one bounds check (`ops` when not).
    Fixed(Box<FixedOp>),
    /// Anything else with a data-dependent shape (large arrays, nested
    /// sequences and variants).
    Other(Box<Ty>),
}

/// A compiled variant: what `Ty::Variant` holds, its options as programs.
#[derive(Debug, Clone)]
pub struct VariantOp {
    pub tag: String,
    pub reg: u32,
    pub ranges: Vec<(i128, i128, u32)>,
    pub tag_signed: bool,
    pub options: Vec<Vec<Op>>,
}

/// LTTng's event headers (`event_header_compact`: a 5-bit id and a 27-bit timestamp;
/// `event_header_large`: a 16-bit id and a 32-bit timestamp; both with an extended form, a
/// 32-bit id and a 64-bit timestamp, byte-aligned, when the id is all ones), read without running their
/// program: the places of every value are known once the id is. Only little-endian headers
/// of exactly that shape are recognised (`HeaderFast::of`); any other runs its program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderFast {
    /// The struct's alignment (bits).
    pub align: u32,
    pub id_size: u32,
    pub id_align: u32,
    /// The id's register (the variant's tag).
    pub id_reg: u32,
    /// The id meaning "extended".
    pub extended: u64,
    pub ts_size: u32,
    pub ts_align: u32,
    /// The extended id's register, u32::MAX when none.
    pub ext_id_reg: u32,
}

impl HeaderFast {
    pub fn of(prog: &[Op]) -> Option<HeaderFast> {
        let (align, rest) = match prog {
            [Op::Align(a), rest @ ..] => (*a, rest),
            rest => (1, rest),
        };
        let [Op::Int { size: id_size, align: id_align, le: true, signed: false, role: Role::EventId, reg: Some(id_reg) }, Op::Variant(v)] =
            rest
        else {
            return None;
        };
        let extended = (1u64 << *id_size) - 1;
        let ranges_ok = v.reg == *id_reg
            && !v.tag_signed
            && v.options.len() == 2
            && v.ranges.len() == 2
            && v.ranges.contains(&(0, extended as i128 - 1, 0))
            && v.ranges.contains(&(extended as i128, extended as i128, 1));
        if !ranges_ok || *id_size > 32 {
            return None;
        }
        let (ts_size, ts_align) = match v.options[0].as_slice() {
            [Op::Int { size, align, le: true, signed: false, role: Role::Clock, reg: None }] => (*size, *align),
            [Op::Align(a), Op::Int { size, align, le: true, signed: false, role: Role::Clock, reg: None }] if a == align => (*size, *align),
            _ => return None,
        };
        let ext_id_reg = match v.options[1].as_slice() {
            [Op::Align(a), Op::Int { size: 32, align: 8, le: true, signed: false, role: Role::EventId, reg }, Op::Int { size: 64, align: 8, le: true, signed: false, role: Role::Clock, reg: None }]
                if *a == 8 =>
            {
                reg.unwrap_or(u32::MAX)
            }
            _ => return None,
        };
        if ts_size > 32 || !matches!(align, 1 | 8 | 16 | 32 | 64) {
            return None;
        }
        Some(HeaderFast { align, id_size: *id_size, id_align: *id_align, id_reg: *id_reg, extended, ts_size, ts_align, ext_id_reg })
    }
}

/// One value of an `Op::Fixed`: at byte `off` from its start, an integer of
/// `64 - shift` bits (sign-extended when `signed`; kept in register `reg`
/// unless u32::MAX), or a text array of `text` bytes.
#[derive(Debug, Clone, Copy)]
pub struct FixedItem {
    pub off: u32,
    pub shift: u32,
    pub signed: bool,
    pub reg: u32,
    pub text: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct FixedOp {
    pub items: Vec<FixedItem>,
    /// Bytes the values occupy.
    pub bytes: u32,
    /// The same values as plain operations.
    pub ops: Vec<Op>,
}

/// `prog` with each run of two or more operations that `Op::Fixed` can read
/// fused into one (also inside variants' options and sequences' elements).
fn fuse(prog: Vec<Op>) -> Vec<Op> {
    let mut out = Vec::with_capacity(prog.len());
    let mut run: Vec<Op> = Vec::new();
    let flush = |run: &mut Vec<Op>, out: &mut Vec<Op>| {
        let values = run.iter().filter(|o| !matches!(o, Op::Align(_))).count();
        if values >= 2 {
            let mut items = Vec::new();
            let mut off = 0u64;
            for op in run.iter() {
                match *op {
                    Op::Int { size, signed, reg, .. } => {
                        items.push(FixedItem { off: off as u32, shift: 64 - size, signed, reg: reg.unwrap_or(u32::MAX), text: None });
                        off += size as u64 / 8;
                    }
                    Op::Text(len) => {
                        items.push(FixedItem { off: off as u32, shift: 0, signed: false, reg: u32::MAX, text: Some(len as u32) });
                        off += len;
                    }
                    _ => {}
                }
            }
            out.push(Op::Fixed(Box::new(FixedOp { items, bytes: off as u32, ops: std::mem::take(run) })));
        } else {
            out.append(run);
        }
    };
    let mut bytes = 0u64;
    for op in prog {
        let fits = match &op {
            Op::Int { size, align, le, role, .. } => *le && *align <= 8 && matches!(size, 8 | 16 | 32 | 64) && matches!(role, Role::None),
            Op::Text(len) => *len <= u32::MAX as u64 / 2,
            Op::Align(a) => *a <= 8,
            _ => false,
        };
        let size = match &op {
            Op::Int { size, .. } => *size as u64 / 8,
            Op::Text(len) => *len,
            _ => 0,
        };
        if fits && bytes + size <= u32::MAX as u64 / 16 {
            bytes += size;
            run.push(op);
            continue;
        }
        flush(&mut run, &mut out);
        bytes = 0;
        out.push(match op {
            Op::Variant(mut v) => {
                v.options = v.options.into_iter().map(fuse).collect();
                Op::Variant(v)
            }
            Op::Seq(mut q) => {
                q.prog = fuse(std::mem::take(&mut q.prog));
                Op::Seq(q)
            }
            other => other,
        });
    }
    flush(&mut run, &mut out);
    out
}

/// A compiled sequence (not text): its length register, the element's
/// alignment, its type (for the length check) and its program.
#[derive(Debug, Clone)]
pub struct SeqOp {
    pub reg: u32,
    pub elem_align: u32,
    pub elem: Box<Ty>,
    pub prog: Vec<Op>,
}

pub fn compile(ty: &Ty, out: &mut Vec<Op>) {
    match ty {
        Ty::Int(i) => out.push(Op::Int { size: i.size, align: i.align, le: i.le, signed: i.signed, role: i.role, reg: i.reg }),
        Ty::Enum(e) => {
            let i = &e.int;
            out.push(Op::Int { size: i.size, align: i.align, le: i.le, signed: i.signed, role: i.role, reg: i.reg })
        }
        Ty::Float(f) => {
            out.push(if f.mant_dig == 24 { Op::F32 { align: f.align, le: f.le } } else { Op::F64 { align: f.align, le: f.le } })
        }
        Ty::Str => out.push(Op::Str),
        Ty::Struct(s) => {
            if s.align > 1 {
                out.push(Op::Align(s.align));
            }
            for f in &s.fields {
                compile(&f.ty, out);
            }
        }
        Ty::Array { text: true, len, .. } => out.push(Op::Text(*len)),
        Ty::Array { elem, len, .. }
            if *len <= 32
                && !matches!(**elem, Ty::Seq { .. } | Ty::Variant(_))
                && (out.len() as u64).saturating_add(len.saturating_mul(flat_ops(elem))) <= MAX_PROGRAM_OPS =>
        {
            for _ in 0..*len {
                compile(elem, out);
            }
        }
        Ty::Variant(v) if v.options.iter().all(|o| flat_ops(&o.ty) <= MAX_PROGRAM_OPS && !has_number_array(&o.ty)) => {
            let options = v.options.iter().map(|o| program(Some(&o.ty))).collect();
            out.push(Op::Variant(Box::new(VariantOp {
                tag: v.tag.clone(),
                reg: v.reg,
                ranges: v.ranges.clone(),
                tag_signed: v.tag_signed,
                options,
            })))
        }
        Ty::Seq { elem, reg, text: false, .. } if flat_ops(elem) <= 64 && plain(elem) => {
            out.push(Op::Seq(Box::new(SeqOp { reg: *reg, elem_align: elem.align(), elem: elem.clone(), prog: program(Some(elem)) })))
        }
        other => out.push(Op::Other(Box::new(other.clone()))),
    }
}

/// Whether `ty` holds an array of numbers outside sequences and variants: a
/// variant option with one is left to the tree walker, which checks an
/// array's length before its elements (`compile` unrolls small arrays, whose
/// damage then shows at the element), so that what a damaged one says stays
/// the same.
fn has_number_array(ty: &Ty) -> bool {
    match ty {
        Ty::Array { text: false, .. } => true,
        Ty::Struct(s) => s.fields.iter().any(|f| has_number_array(&f.ty)),
        _ => false,
    }
}

/// Whether `ty` is numbers, strings and text arrays, possibly in structures:
/// its program decodes it exactly as the tree walker would, errors included
/// (no arrays of numbers, whose walker checks their length first).
fn plain(ty: &Ty) -> bool {
    match ty {
        Ty::Int(_) | Ty::Enum(_) | Ty::Float(_) | Ty::Str | Ty::Array { text: true, .. } => true,
        Ty::Struct(s) => s.fields.iter().all(|f| plain(&f.ty)),
        _ => false,
    }
}

/// Arrays are unrolled only while the program stays below this many
/// operations (nested small arrays would otherwise multiply: 32^7 for
/// `x[32][32][32][32][32][32][32]`).
const MAX_PROGRAM_OPS: u64 = 1 << 14;

/// An upper bound of the number of operations `compile` emits for `ty`.
fn flat_ops(ty: &Ty) -> u64 {
    match ty {
        Ty::Struct(s) => s.fields.iter().fold(1u64, |n, f| if n > MAX_PROGRAM_OPS { n } else { n.saturating_add(flat_ops(&f.ty)) }),
        Ty::Array { elem, len, text: false } if *len <= 32 && !matches!(**elem, Ty::Seq { .. } | Ty::Variant(_)) => {
            len.saturating_mul(flat_ops(elem)).max(1)
        }
        _ => 1,
    }
}

/// The programs of an event's stream event context, event context and
/// payload as one (fused across their borders), with the tape indexes where
/// the second and the third begin; None when the first two do not produce a
/// fixed number of values.
pub fn body_program(parts: [Option<&Ty>; 3]) -> Option<(Vec<Op>, (usize, usize))> {
    let mut v = Vec::new();
    let mut starts = [0usize; 2];
    for (k, part) in parts.iter().enumerate() {
        if let Some(t) = part {
            compile(t, &mut v);
        }
        if k < 2 {
            starts[k] = v.iter().map(static_values).sum::<Option<usize>>()?;
        }
    }
    Some((fuse(v), (starts[0], starts[1])))
}

/// Values an (unfused) operation puts on the tape, when that is fixed.
fn static_values(op: &Op) -> Option<usize> {
    match op {
        Op::Align(_) => Some(0),
        Op::Int { .. } | Op::F32 { .. } | Op::F64 { .. } | Op::Str | Op::Text(_) => Some(1),
        Op::Variant(_) | Op::Seq(_) | Op::Fixed(_) | Op::Other(_) => None,
    }
}

pub fn program(ty: Option<&Ty>) -> Vec<Op> {
    let mut v = Vec::new();
    if let Some(t) = ty {
        compile(t, &mut v);
    }
    fuse(v)
}
