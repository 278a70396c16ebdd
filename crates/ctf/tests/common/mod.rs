//! Helpers shared by the integration tests: hand-made traces in temporary
//! directories, and a reader that collects what roscope-ctf makes of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use roscope_ctf::{json, TraceSet};

pub const MAGIC: u32 = 0xC1FC_1FC1;

/// A directory under the system temp dir, removed on drop (kept, and its
/// path printed, when ROSCOPE_KEEP_TEST_DIRS is set: handy to run babeltrace2 on it).
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!("roscope-ctf-test-{}-{}-{}", tag, std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
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

/// What roscope-ctf makes of a trace directory.
pub struct Dump {
    pub lines: Vec<String>,
    pub ts: Vec<u64>,
    pub names: Vec<String>,
    pub warnings: Vec<String>,
    pub loss: Vec<roscope_ctf::reader::StreamLoss>,
    pub packets: Vec<u64>,
}

impl Dump {
    /// The `"payload":{...}` object of each event, as JSON text.
    pub fn payloads(&self) -> Vec<String> {
        self.lines.iter().map(|l| json_member(l, "payload")).collect()
    }
    pub fn contexts(&self) -> Vec<String> {
        self.lines.iter().map(|l| json_member(l, "context")).collect()
    }
}

/// The value of a top-level member of a JSON line, assuming it is an object
/// (brace matching that skips strings).
pub fn json_member(line: &str, key: &str) -> String {
    let pat = format!("\"{}\":", key);
    let start = line.find(&pat).unwrap_or_else(|| panic!("no {} in {}", key, line)) + pat.len();
    let b = line.as_bytes();
    let (mut depth, mut in_str, mut esc) = (0i32, false, false);
    for (i, &c) in b.iter().enumerate().skip(start) {
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return line[start..=i].to_string();
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced JSON: {}", line)
}

pub fn dump(dir: &Path) -> Dump {
    let mut set = TraceSet::open(&[dir]).unwrap_or_else(|e| panic!("open {}: {}", dir.display(), e));
    let mut d = Dump { lines: vec![], ts: vec![], names: vec![], warnings: vec![], loss: vec![], packets: vec![] };
    let mut buf = Vec::new();
    while let Some(i) = set.next() {
        buf.clear();
        json::write_event(&mut buf, &set, &set.streams[i]);
        let s = &set.streams[i];
        d.ts.push(s.cur_ts);
        d.names.push(set.traces[s.trace].md.events[s.cur_class].name.clone());
        d.lines.push(String::from_utf8(buf.clone()).unwrap().trim_end().to_string());
    }
    d.warnings = set.all_warnings().iter().map(|w| w.to_string()).collect();
    d.loss = set.losses();
    d.packets = set.streams.iter().map(|s| s.packets).collect();
    d
}
