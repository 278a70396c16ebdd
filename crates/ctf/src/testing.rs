//! Hand-made CTF traces for tests (feature `testing`): the byte-level pieces
//! the decoder's own tests use (`W`, `std_metadata`, `Pkt`, `ev`), and
//! `TraceWriter`, which writes a small LTTng-UST-like trace (vpid, vtid and
//! procname contexts, a hostname) from events given by name and value, for
//! the tests of the crates that read traces (e.g. roscope-model).
//!
//! Nothing here is used by the decoder itself.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub const MAGIC: u32 = 0xC1FC_1FC1;

/// A directory under the system temp dir, removed on drop (kept, and its
/// path printed, when ROSCOPE_KEEP_TEST_DIRS is set: handy to run babeltrace2 on it).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!("roscope-test-{}-{}-{}", tag, std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        if std::env::var_os("ROSCOPE_KEEP_TEST_DIRS").is_some() {
            eprintln!("test trace: {}", p.display());
        }
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn write(&self, name: &str, data: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, data).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("ROSCOPE_KEEP_TEST_DIRS").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Byte writer with an explicit byte order.
#[derive(Default)]
pub struct W {
    pub b: Vec<u8>,
    pub be: bool,
}

impl W {
    pub fn le() -> W {
        W { b: Vec::new(), be: false }
    }
    pub fn be() -> W {
        W { b: Vec::new(), be: true }
    }
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.b.push(v);
        self
    }
    pub fn u16(&mut self, v: u16) -> &mut Self {
        let x = if self.be { v.to_be_bytes() } else { v.to_le_bytes() };
        self.b.extend_from_slice(&x);
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        let x = if self.be { v.to_be_bytes() } else { v.to_le_bytes() };
        self.b.extend_from_slice(&x);
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        let x = if self.be { v.to_be_bytes() } else { v.to_le_bytes() };
        self.b.extend_from_slice(&x);
        self
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.b.extend_from_slice(v);
        self
    }
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.b)
    }
}

/// The metadata every "standard" test trace starts with: packet header
/// {magic, stream_id} (8 bytes), packet context {timestamp_begin,
/// timestamp_end, content_size, packet_size, packet_seq_num,
/// events_discarded} (6 x 8 bytes), event header {id: u8, timestamp: u64}
/// (9 bytes, byte-aligned). `events` is appended verbatim.
pub fn std_metadata(byte_order: &str, events: &str) -> String {
    format!(
        r#"/* CTF 1.8 */
typealias integer {{ size = 8; align = 8; signed = false; }} := uint8_t;
typealias integer {{ size = 16; align = 8; signed = false; }} := uint16_t;
typealias integer {{ size = 32; align = 8; signed = false; }} := uint32_t;
typealias integer {{ size = 64; align = 8; signed = false; }} := uint64_t;
trace {{
    major = 1;
    minor = 8;
    byte_order = {bo};
    packet.header := struct {{
        uint32_t magic;
        uint32_t stream_id;
    }};
}};
clock {{
    name = "c";
    freq = 1000000000;
    offset = 0;
}};
typealias integer {{ size = 64; align = 8; signed = false; map = clock.c.value; }} := uint64_clock_t;
stream {{
    id = 0;
    packet.context := struct {{
        uint64_clock_t timestamp_begin;
        uint64_clock_t timestamp_end;
        uint64_t content_size;
        uint64_t packet_size;
        uint64_t packet_seq_num;
        uint64_t events_discarded;
    }};
    event.header := struct {{
        uint8_t id;
        uint64_clock_t timestamp;
    }};
}};
{events}
"#,
        bo = byte_order,
        events = events
    )
}

pub const STD_HEADER_BYTES: usize = 56;

/// One packet of a standard trace: header, context, then `events`, padded
/// with zeros to `packet_bytes` (0: no padding, packet = content).
pub struct Pkt {
    pub be: bool,
    pub ts_begin: u64,
    pub ts_end: u64,
    pub seq: u64,
    pub discarded: u64,
    pub packet_bytes: usize,
    pub magic: u32,
}

impl Pkt {
    pub fn new(be: bool) -> Pkt {
        Pkt { be, ts_begin: 0, ts_end: 1000, seq: 0, discarded: 0, packet_bytes: 0, magic: MAGIC }
    }
    pub fn build(&self, events: &[u8]) -> Vec<u8> {
        let content = STD_HEADER_BYTES + events.len();
        let psize = if self.packet_bytes == 0 { content } else { self.packet_bytes };
        assert!(psize >= content);
        let mut w = W { b: Vec::new(), be: self.be };
        w.u32(self.magic).u32(0);
        w.u64(self.ts_begin).u64(self.ts_end);
        w.u64((content * 8) as u64).u64((psize * 8) as u64);
        w.u64(self.seq).u64(self.discarded);
        w.bytes(events);
        w.b.resize(psize, 0);
        w.b
    }
}

/// One event of a standard trace: id, 64-bit timestamp, payload bytes.
pub fn ev(be: bool, id: u8, ts: u64, payload: &[u8]) -> Vec<u8> {
    let mut w = W { b: Vec::new(), be };
    w.u8(id).u64(ts).bytes(payload);
    w.b
}

/// The type of a payload field of a `TraceWriter` event class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// 64-bit unsigned integer (handles, addresses).
    U64,
    /// 64-bit signed integer (timestamps, periods).
    I64,
    /// 8-bit unsigned integer (flags).
    U8,
    /// Null-terminated UTF-8 string.
    Str,
    /// Fixed-length array of bytes (e.g. a 24-byte `gid`).
    Bytes(usize),
    /// Sequence of 64-bit unsigned integers, preceded by its length field
    /// `<name>_length`.
    U64Seq,
}

/// A payload value of a `TraceWriter` event, in the order of its class's fields.
#[derive(Clone, Copy, Debug)]
pub enum Value<'a> {
    U(u64),
    I(i64),
    S(&'a str),
    Bytes(&'a [u8]),
    Seq(&'a [u64]),
}

/// One process/thread an event comes from: LTTng's `vpid`, `vtid` and
/// `procname` contexts.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    pub pid: i32,
    pub tid: i32,
    pub procname: &'a str,
}

/// Writes one little-endian CTF 1.8 trace the way LTTng-UST lays it out: a
/// `metadata` file and one stream file with a single packet. Event classes
/// are declared by name and fields; events are added in time order.
pub struct TraceWriter {
    hostname: String,
    clock_offset_s: i64,
    classes: Vec<(String, Vec<(String, FieldType)>)>,
    class_of: HashMap<String, usize>,
    events: W,
    first_ts: Option<u64>,
    last_ts: u64,
}

impl TraceWriter {
    pub fn new(hostname: &str) -> TraceWriter {
        TraceWriter {
            hostname: hostname.to_string(),
            clock_offset_s: 0,
            classes: Vec::new(),
            class_of: HashMap::new(),
            events: W::le(),
            first_ts: None,
            last_ts: 0,
        }
    }

    /// The clock's offset to the Unix epoch, in seconds (metadata `clock.offset_s`).
    pub fn clock_offset_s(&mut self, s: i64) -> &mut Self {
        self.clock_offset_s = s;
        self
    }

    /// Declares an event class (e.g. `"ros2:rcl_node_init"`) and its payload fields.
    pub fn class(&mut self, name: &str, fields: &[(&str, FieldType)]) -> &mut Self {
        assert!(!self.class_of.contains_key(name), "event class {} declared twice", name);
        self.class_of.insert(name.to_string(), self.classes.len());
        self.classes.push((name.to_string(), fields.iter().map(|(n, t)| (n.to_string(), *t)).collect()));
        self
    }

    /// Appends an event of class `name` at `ts` (ns), from `ctx`, with one
    /// value per field of its class. Panics when the values do not fit the class.
    pub fn event(&mut self, ts: u64, ctx: Ctx, name: &str, values: &[Value]) -> &mut Self {
        let id = *self.class_of.get(name).unwrap_or_else(|| panic!("event class {} is not declared", name));
        assert!(ts >= self.last_ts, "events must be added in time order ({} after {})", ts, self.last_ts);
        self.first_ts.get_or_insert(ts);
        self.last_ts = ts;
        let fields = &self.classes[id].1;
        assert_eq!(fields.len(), values.len(), "{}: {} fields, {} values", name, fields.len(), values.len());
        let w = &mut self.events;
        w.u16(id as u16).u64(ts);
        w.u32(ctx.pid as u32).u32(ctx.tid as u32);
        let mut pn = [0u8; 17];
        let b = ctx.procname.as_bytes();
        pn[..b.len().min(16)].copy_from_slice(&b[..b.len().min(16)]);
        w.bytes(&pn);
        for ((fname, ty), v) in fields.iter().zip(values) {
            match (ty, v) {
                (FieldType::U64, Value::U(x)) => {
                    w.u64(*x);
                }
                (FieldType::I64, Value::I(x)) => {
                    w.u64(*x as u64);
                }
                (FieldType::U8, Value::U(x)) => {
                    w.u8(*x as u8);
                }
                (FieldType::Str, Value::S(s)) => {
                    w.bytes(s.as_bytes()).u8(0);
                }
                (FieldType::Bytes(n), Value::Bytes(b)) if b.len() == *n => {
                    w.bytes(b);
                }
                (FieldType::U64Seq, Value::Seq(v)) => {
                    w.u64(v.len() as u64);
                    for x in *v {
                        w.u64(*x);
                    }
                }
                _ => panic!("{}.{}: value {:?} does not fit type {:?}", name, fname, v, ty),
            }
        }
        self
    }

    /// The trace's metadata text.
    pub fn metadata(&self) -> String {
        let mut events = String::new();
        for (id, (name, fields)) in self.classes.iter().enumerate() {
            let mut f = String::new();
            for (n, t) in fields {
                f.push_str(&match t {
                    FieldType::U64 => format!("\t\tuint64_t {};\n", n),
                    FieldType::I64 => format!("\t\tint64_t {};\n", n),
                    FieldType::U8 => format!("\t\tuint8_t {};\n", n),
                    FieldType::Str => format!("\t\tstring {};\n", n),
                    FieldType::Bytes(k) => format!("\t\tuint8_t {}[{}];\n", n, k),
                    FieldType::U64Seq => format!("\t\tuint64_t {n}_length;\n\t\tuint64_t {n}[{n}_length];\n", n = n),
                });
            }
            events.push_str(&format!(
                "event {{\n\tname = \"{}\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n{}\t}};\n}};\n\n",
                name, id, f
            ));
        }
        format!(
            r#"/* CTF 1.8 */
typealias integer {{ size = 8; align = 8; signed = false; }} := uint8_t;
typealias integer {{ size = 16; align = 8; signed = false; }} := uint16_t;
typealias integer {{ size = 32; align = 8; signed = false; }} := uint32_t;
typealias integer {{ size = 64; align = 8; signed = false; }} := uint64_t;
typealias integer {{ size = 32; align = 8; signed = true; }} := int32_t;
typealias integer {{ size = 64; align = 8; signed = true; }} := int64_t;
trace {{
    major = 1;
    minor = 8;
    byte_order = le;
    packet.header := struct {{
        uint32_t magic;
        uint32_t stream_id;
    }};
}};
env {{
    domain = "ust";
    tracer_name = "lttng-ust";
    tracer_major = 2;
    tracer_minor = 13;
    hostname = "{host}";
}};
clock {{
    name = "monotonic";
    freq = 1000000000;
    offset_s = {offset_s};
    offset = 0;
}};
typealias integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} := uint64_clock_t;
stream {{
    id = 0;
    packet.context := struct {{
        uint64_clock_t timestamp_begin;
        uint64_clock_t timestamp_end;
        uint64_t content_size;
        uint64_t packet_size;
        uint64_t packet_seq_num;
        uint64_t events_discarded;
    }};
    event.header := struct {{
        uint16_t id;
        uint64_clock_t timestamp;
    }};
    event.context := struct {{
        int32_t vpid;
        int32_t vtid;
        integer {{ size = 8; align = 8; signed = true; encoding = UTF8; }} procname[17];
    }};
}};
{events}"#,
            host = self.hostname,
            offset_s = self.clock_offset_s,
            events = events
        )
    }

    /// Writes `metadata` and the stream file `channel0_0` into `dir`.
    pub fn write(&self, dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("metadata"), self.metadata()).unwrap();
        let pkt = Pkt { ts_begin: self.first_ts.unwrap_or(0), ts_end: self.last_ts, ..Pkt::new(false) };
        std::fs::write(dir.join("channel0_0"), pkt.build(&self.events.b)).unwrap();
    }
}
