//! A trace's metadata: read (text or packetized), parsed, and resolved into
//! stream and event classes ready for decoding.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use crate::error::{CtfError, Result, Warning};
use crate::tsdl::{self, Decl, Value};
use crate::types::{body_program, byte_order, collect_refs, program, HeaderFast, Linker, Op, Resolver, Ty};

pub const METADATA_MAGIC: u32 = 0x75D1_1D57;

#[derive(Debug, Clone)]
pub struct Clock {
    pub name: String,
    pub freq: u64,
    pub offset_s: i64,
    pub offset: i64,
    pub uuid: Option<String>,
    pub description: Option<String>,
}

impl Clock {
    /// Clock cycles to nanoseconds.
    #[inline]
    pub fn to_ns(&self, cycles: u64) -> u64 {
        if self.freq == 1_000_000_000 {
            cycles
        } else {
            ((cycles as u128) * 1_000_000_000u128 / self.freq as u128) as u64
        }
    }
    /// Offset of the clock's origin to the Unix epoch, in ns.
    pub fn offset_ns(&self) -> i64 {
        let off_cycles_ns =
            if self.freq == 1_000_000_000 { self.offset as i128 } else { (self.offset as i128) * 1_000_000_000i128 / self.freq as i128 };
        (self.offset_s as i128 * 1_000_000_000 + off_cycles_ns) as i64
    }
}

#[derive(Debug, Clone)]
pub struct EventClass {
    pub id: u64,
    pub name: String,
    pub stream_id: u64,
    pub loglevel: Option<i64>,
    pub context: Option<Ty>,
    pub payload: Option<Ty>,
    /// Compiled decoding programs of `context` and `payload`.
    pub context_prog: Vec<Op>,
    pub payload_prog: Vec<Op>,
    /// The stream's event context, this context and the payload as one
    /// program, and where the second and third begin on the tape, when the
    /// first two produce a fixed number of values (else `body_starts` is None
    /// and the three programs run one after the other).
    pub body_prog: Vec<Op>,
    pub body_starts: Option<(usize, usize)>,
}

#[derive(Debug, Clone)]
pub struct StreamClass {
    pub id: u64,
    pub packet_context: Option<Ty>,
    pub event_header: Option<Ty>,
    pub event_context: Option<Ty>,
    /// Event classes of this stream, by id.
    pub events: HashMap<u64, usize>,
    pub event_header_prog: Vec<Op>,
    /// The event header read without its program, when it has LTTng's shape.
    pub header_fast: Option<HeaderFast>,
    pub event_context_prog: Vec<Op>,
}

#[derive(Debug, Clone)]
pub enum EnvValue {
    Int(i64),
    Str(String),
}

#[derive(Debug, Clone)]
pub struct Metadata {
    pub file: String,
    pub major: u32,
    pub minor: u32,
    pub le: bool,
    pub uuid: Option<[u8; 16]>,
    pub env: BTreeMap<String, EnvValue>,
    pub clocks: Vec<Clock>,
    pub packet_header: Option<Ty>,
    pub streams: Vec<StreamClass>,
    pub events: Vec<EventClass>,
    pub nregs: u32,
    pub text: String,
}

impl Metadata {
    pub fn stream_class(&self, id: u64) -> Option<&StreamClass> {
        self.streams.iter().find(|s| s.id == id)
    }
    pub fn hostname(&self) -> Option<&str> {
        match self.env.get("hostname") {
            Some(EnvValue::Str(s)) => Some(s),
            _ => None,
        }
    }
    /// The clock events are timed with: the one the event header maps to, or the only one.
    pub fn main_clock(&self) -> Option<&Clock> {
        self.clocks.first()
    }
}

/// Reads a metadata file, packetized or plain text, into TSDL text.
pub fn read_text(path: &Path, warnings: &mut Vec<Warning>) -> Result<String> {
    let file = path.display().to_string();
    let data = std::fs::read(path).map_err(|e| CtfError::Io { path: file.clone(), msg: e.to_string() })?;
    if data.len() >= 4 {
        let le = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        let be = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        if le == METADATA_MAGIC || be == METADATA_MAGIC {
            let rd = |off: usize| -> u32 {
                let b = [data[off], data[off + 1], data[off + 2], data[off + 3]];
                if le == METADATA_MAGIC {
                    u32::from_le_bytes(b)
                } else {
                    u32::from_be_bytes(b)
                }
            };
            let mut text = Vec::with_capacity(data.len());
            let mut off = 0usize;
            while off < data.len() {
                if data.len() - off < 37 {
                    warnings.push(Warning {
                        file: file.clone(),
                        offset: Some(off as u64),
                        msg: format!("metadata packet header cut short ({} bytes left); ignored", data.len() - off),
                    });
                    break;
                }
                // A later packet whose magic alone is damaged (same UUID as the
                // first packet, valid sizes) is read, with a warning.
                let same_uuid = off > 0 && data[off + 4..off + 20] == data[4..20];
                if rd(off) != METADATA_MAGIC {
                    let (c, p) = (rd(off + 24) as usize / 8, rd(off + 28) as usize / 8);
                    if !(same_uuid && c >= 37 && p >= c) {
                        return Err(CtfError::Decode {
                            file,
                            offset: off as u64,
                            msg: format!("wrong metadata packet magic 0x{:08x} (expected 0x{:08x})", rd(off), METADATA_MAGIC),
                        });
                    }
                    let msg =
                        format!("metadata packet magic 0x{:08x} is damaged (its UUID and sizes are valid): the packet is read", rd(off));
                    warnings.push(Warning { file: file.clone(), offset: Some(off as u64), msg });
                }
                // magic, uuid[16], checksum, content_size, packet_size (bits),
                // compression, encryption, checksum schemes, major, minor.
                let content = rd(off + 24) as usize / 8;
                let psize = rd(off + 28) as usize / 8;
                let compression = data[off + 32];
                let encryption = data[off + 33];
                if compression != 0 || encryption != 0 {
                    return Err(CtfError::Decode {
                        file,
                        offset: off as u64,
                        msg: "compressed or encrypted metadata is not supported".into(),
                    });
                }
                let mut psize = psize;
                if content >= 37 && psize < content {
                    // The packet size is damaged: the next packet starts at the
                    // next header after the content (or there is none).
                    let magic = if le == METADATA_MAGIC { METADATA_MAGIC.to_le_bytes() } else { METADATA_MAGIC.to_be_bytes() };
                    let from = (off + content).min(data.len());
                    let next = memchr::memmem::find(&data[from..], &magic).map(|i| from + i).unwrap_or(data.len());
                    let msg = format!(
                        "metadata packet size {} bytes is smaller than its content ({} bytes): damaged; the next packet is at byte {}",
                        psize, content, next
                    );
                    warnings.push(Warning { file: file.clone(), offset: Some(off as u64), msg });
                    psize = next - off;
                }
                if content < 37 || psize < content {
                    return Err(CtfError::Decode {
                        file,
                        offset: off as u64,
                        msg: format!("metadata packet sizes are invalid (content {} bytes, packet {} bytes)", content, psize),
                    });
                }
                let end = off + content;
                if end > data.len() {
                    warnings.push(Warning {
                        file: file.clone(),
                        offset: Some(off as u64),
                        msg: format!("metadata packet cut short: declares {} bytes, {} present", content, data.len() - off),
                    });
                    text.extend_from_slice(&data[off + 37..]);
                    break;
                }
                text.extend_from_slice(&data[off + 37..end]);
                // A packet size that skips over a packet header is damaged:
                // the next packet starts at that header.
                let magic = if le == METADATA_MAGIC { METADATA_MAGIC.to_le_bytes() } else { METADATA_MAGIC.to_be_bytes() };
                let upto = (off + psize).min(data.len());
                let skipped = memchr::memmem::find_iter(&data[end..upto], &magic)
                    .map(|i| end + i)
                    .find(|&i| i + 37 <= data.len() && data[i + 4..i + 20] == data[4..20]);
                if let Some(next) = skipped {
                    let msg =
                        format!("metadata packet size {} bytes skips the packet at byte {}: damaged; reading goes on there", psize, next);
                    warnings.push(Warning { file: file.clone(), offset: Some(off as u64), msg });
                    off = next;
                    continue;
                }
                off += psize;
            }
            return Ok(String::from_utf8_lossy(&text).into_owned());
        }
    }
    let text = String::from_utf8_lossy(&data).into_owned();
    if !text.trim_start().starts_with("/* CTF") && !text.contains("trace") {
        return Err(CtfError::Decode { file, offset: 0, msg: "not CTF metadata (no packet magic, no '/* CTF' text header)".into() });
    }
    Ok(text)
}

fn uuid_bytes(s: &str) -> Option<[u8; 16]> {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for i in 0..16 {
        out[i] = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

type MErr<'a> = &'a dyn Fn(u32, String) -> CtfError;

/// The trace's byte order, which applies to every type declared "native", before or after it.
fn trace_byte_order(decls: &[Decl], merr: MErr) -> Result<bool> {
    let mut le = true;
    for d in decls {
        if let Decl::Block { kind, attrs, .. } = d {
            if kind == "trace" {
                for a in attrs {
                    if a.key == "byte_order" {
                        le = byte_order(a, true).map_err(|(l, m)| merr(l, m))?;
                    }
                }
            }
        }
    }
    Ok(le)
}

fn empty_stream_class(id: u64) -> StreamClass {
    StreamClass {
        id,
        packet_context: None,
        event_header: None,
        event_context: None,
        events: HashMap::new(),
        event_header_prog: Vec::new(),
        header_fast: None,
        event_context_prog: Vec::new(),
    }
}

fn trace_block(md: &mut Metadata, r: &mut Resolver, attrs: &[tsdl::Attr], merr: MErr) -> Result<()> {
    for a in attrs {
        match (a.key.as_str(), &a.value) {
            ("major", Value::Int(v)) => md.major = *v as u32,
            ("minor", Value::Int(v)) => md.minor = *v as u32,
            ("uuid", Value::Str(s)) => md.uuid = uuid_bytes(s),
            ("packet.header", Value::Type(t)) => md.packet_header = Some(r.resolve(t, a.line).map_err(|(l, m)| merr(l, m))?),
            _ => {}
        }
    }
    Ok(())
}

fn env_block(md: &mut Metadata, attrs: &[tsdl::Attr]) {
    for a in attrs {
        let v = match &a.value {
            Value::Int(i) => EnvValue::Int(*i as i64),
            Value::Str(s) => EnvValue::Str(s.clone()),
            Value::Path(p) => EnvValue::Str(p.clone()),
            Value::Type(_) => continue,
        };
        md.env.insert(a.key.clone(), v);
    }
}

fn clock_block(attrs: &[tsdl::Attr], line: u32, merr: MErr) -> Result<Clock> {
    let mut c = Clock { name: String::new(), freq: 1_000_000_000, offset_s: 0, offset: 0, uuid: None, description: None };
    for a in attrs {
        match (a.key.as_str(), &a.value) {
            ("name", Value::Path(p)) | ("name", Value::Str(p)) => c.name = p.clone(),
            ("freq", Value::Int(v)) => c.freq = *v as u64,
            ("offset_s", Value::Int(v)) => c.offset_s = *v as i64,
            ("offset", Value::Int(v)) => c.offset = *v as i64,
            ("uuid", Value::Str(s)) => c.uuid = Some(s.clone()),
            ("description", Value::Str(s)) => c.description = Some(s.clone()),
            _ => {}
        }
    }
    if c.freq == 0 {
        return Err(merr(line, format!("clock '{}' has frequency 0", c.name)));
    }
    Ok(c)
}

fn stream_block(r: &mut Resolver, attrs: &[tsdl::Attr], merr: MErr) -> Result<StreamClass> {
    let mut s = empty_stream_class(0);
    for a in attrs {
        let resolve = |r: &mut Resolver, t| r.resolve(t, a.line).map_err(|(l, m)| merr(l, m));
        match (a.key.as_str(), &a.value) {
            ("id", Value::Int(v)) => s.id = *v as u64,
            ("packet.context", Value::Type(t)) => s.packet_context = Some(resolve(r, t)?),
            ("event.header", Value::Type(t)) => s.event_header = Some(resolve(r, t)?),
            ("event.context", Value::Type(t)) => s.event_context = Some(resolve(r, t)?),
            _ => {}
        }
    }
    Ok(s)
}

fn event_block(r: &mut Resolver, attrs: &[tsdl::Attr], merr: MErr) -> Result<EventClass> {
    let mut e = EventClass {
        id: 0,
        name: String::new(),
        stream_id: u64::MAX,
        loglevel: None,
        context: None,
        payload: None,
        context_prog: Vec::new(),
        payload_prog: Vec::new(),
        body_prog: Vec::new(),
        body_starts: None,
    };
    for a in attrs {
        match (a.key.as_str(), &a.value) {
            ("id", Value::Int(v)) => e.id = *v as u64,
            ("name", Value::Str(s)) | ("name", Value::Path(s)) => e.name = s.clone(),
            ("stream_id", Value::Int(v)) => e.stream_id = *v as u64,
            ("loglevel", Value::Int(v)) => e.loglevel = Some(*v as i64),
            ("context", Value::Type(t)) => e.context = Some(r.resolve(t, a.line).map_err(|(l, m)| merr(l, m))?),
            ("fields", Value::Type(t)) => e.payload = Some(r.resolve(t, a.line).map_err(|(l, m)| merr(l, m))?),
            _ => {}
        }
    }
    Ok(e)
}

/// Puts each event class in its stream class. Events may be declared before
/// their stream class (CARET's metadata does so).
fn attach_events(md: &mut Metadata, merr: MErr) -> Result<()> {
    if md.streams.is_empty() {
        md.streams.push(empty_stream_class(0));
    }
    let single = if md.streams.len() == 1 { Some(md.streams[0].id) } else { None };
    for (idx, e) in md.events.iter_mut().enumerate() {
        if e.stream_id == u64::MAX {
            e.stream_id =
                single.ok_or_else(|| merr(0, format!("event '{}' has no stream_id, and there are several stream classes", e.name)))?;
        }
        let sc = md.streams.iter_mut().find(|s| s.id == e.stream_id).ok_or_else(|| {
            merr(0, format!("event '{}' names stream class {}, which the metadata does not declare", e.name, e.stream_id))
        })?;
        if sc.events.insert(e.id, idx).is_some() {
            return Err(merr(0, format!("event id {} declared twice in stream class {}", e.id, e.stream_id)));
        }
    }
    Ok(())
}

/// Links sequence lengths and variant tags to registers, scope by scope, and
/// compiles each scope's decoding program.
fn link_and_compile(md: &mut Metadata, file: &str) -> Result<()> {
    let mut refs = HashSet::new();
    let all = md
        .packet_header
        .iter()
        .chain(md.streams.iter().flat_map(|s| s.packet_context.iter().chain(s.event_header.iter()).chain(s.event_context.iter())))
        .chain(md.events.iter().flat_map(|e| e.context.iter().chain(e.payload.iter())));
    for t in all {
        collect_refs(t, &mut refs);
    }
    let mut lk = Linker::new(refs);
    let lerr = |what: &str, m: String| CtfError::Metadata { file: file.to_string(), line: 0, msg: format!("{}: {}", what, m) };
    if let Some(t) = md.packet_header.as_mut() {
        lk.link_scope("trace.packet.header", t, false).map_err(|m| lerr("trace packet header", m))?;
    }
    let base = lk.scope_count();
    let mut events = std::mem::take(&mut md.events);
    for s in md.streams.iter_mut() {
        lk.truncate_scopes(base);
        let what = format!("stream class {}", s.id);
        if let Some(t) = s.packet_context.as_mut() {
            lk.link_scope("stream.packet.context", t, false).map_err(|m| lerr(&what, m))?;
        }
        if let Some(t) = s.event_header.as_mut() {
            lk.link_scope("stream.event.header", t, true).map_err(|m| lerr(&what, m))?;
        }
        if let Some(t) = s.event_context.as_mut() {
            lk.link_scope("stream.event.context", t, false).map_err(|m| lerr(&what, m))?;
        }
        let sbase = lk.scope_count();
        for (_, &idx) in s.events.iter() {
            lk.truncate_scopes(sbase);
            let e = &mut events[idx];
            let what = format!("event '{}'", e.name);
            if let Some(t) = e.context.as_mut() {
                lk.link_scope("event.context", t, false).map_err(|m| lerr(&what, m))?;
            }
            if let Some(t) = e.payload.as_mut() {
                lk.link_scope("event.fields", t, false).map_err(|m| lerr(&what, m))?;
            }
        }
    }
    for e in events.iter_mut() {
        e.context_prog = program(e.context.as_ref());
        e.payload_prog = program(e.payload.as_ref());
    }
    for s in md.streams.iter_mut() {
        s.event_header_prog = program(s.event_header.as_ref());
        s.header_fast = HeaderFast::of(&s.event_header_prog);
        s.event_context_prog = program(s.event_context.as_ref());
    }
    for e in events.iter_mut() {
        let Some(s) = md.streams.iter().find(|s| s.id == e.stream_id) else { continue };
        if let Some((prog, starts)) = body_program([s.event_context.as_ref(), e.context.as_ref(), e.payload.as_ref()]) {
            e.body_prog = prog;
            e.body_starts = Some(starts);
        }
    }
    md.events = events;
    md.nregs = lk.nregs;
    Ok(())
}

pub fn parse(text: &str, file: &str) -> Result<Metadata> {
    let decls = tsdl::parse(text, file)?;
    let merr = |line: u32, msg: String| CtfError::Metadata { file: file.to_string(), line, msg };
    let le = trace_byte_order(&decls, &merr)?;
    let mut r = Resolver::new(le, file);
    let mut md = Metadata {
        file: file.to_string(),
        major: 1,
        minor: 8,
        le,
        uuid: None,
        env: BTreeMap::new(),
        clocks: Vec::new(),
        packet_header: None,
        streams: Vec::new(),
        events: Vec::new(),
        nregs: 0,
        text: text.to_string(),
    };
    let mut seen_trace = false;
    for d in &decls {
        match d {
            Decl::TypeAlias { ty, dims, name, line } => r.add_alias(name, ty, dims, *line).map_err(|(l, m)| merr(l, m))?,
            Decl::TypeDef { ty, line } => r.add_named(ty, *line).map_err(|(l, m)| merr(l, m))?,
            Decl::Block { kind, attrs, line } => match kind.as_str() {
                "trace" => {
                    seen_trace = true;
                    trace_block(&mut md, &mut r, attrs, &merr)?;
                }
                "env" => env_block(&mut md, attrs),
                "clock" => md.clocks.push(clock_block(attrs, *line, &merr)?),
                "stream" => {
                    let s = stream_block(&mut r, attrs, &merr)?;
                    if md.streams.iter().any(|x| x.id == s.id) {
                        return Err(merr(*line, format!("stream class {} declared twice", s.id)));
                    }
                    md.streams.push(s);
                }
                "event" => md.events.push(event_block(&mut r, attrs, &merr)?),
                _ => {}
            },
        }
    }
    if !seen_trace {
        return Err(merr(0, "no 'trace' block".into()));
    }
    attach_events(&mut md, &merr)?;
    link_and_compile(&mut md, file)?;
    Ok(md)
}
