//! perf.data, read directly: the sched_switch and sched_wakeup samples and the
//! COMM records (a task's new name after an exec or a prctl(PR_SET_NAME)),
//! in the order `perf script` gives them, without perf's text.
//!
//! The file's layout (perf's `tools/perf/Documentation/perf.data-file-format`):
//! a header, the event attributes (each with its sample ids), the data section
//! (records), then the feature sections, of which the tracing data gives each
//! tracepoint's id, its fields' offsets and its print format. perf writes the
//! records of each CPU's buffer in turn, with FINISHED_ROUND marks between
//! rounds; `perf script` orders them as its ordered-events queue does: by time,
//! those of equal time in file order, and at each round mark it hands out the
//! events up to the newest time seen by the previous mark. So does this reader.
//!
//! What it does not read (a pipe-mode or compressed file, another byte order,
//! samples with read values, a switch format it cannot map onto perf's "R"
//! state) is an `Unsupported` error: the caller reads that file through `perf
//! script` instead.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};

use rustc_hash::FxHashMap;

use super::{Kind, RawEvent};

#[derive(Debug)]
pub enum PerfError {
    /// Not a layout this reader handles (the caller uses `perf script`).
    Unsupported(String),
    /// The file cannot be read or is damaged.
    Bad(String),
    /// The file has no sched:sched_switch events.
    NoSched,
}

impl std::fmt::Display for PerfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PerfError::Unsupported(m) | PerfError::Bad(m) => f.write_str(m),
            PerfError::NoSched => f.write_str("it has no sched:sched_switch events"),
        }
    }
}

/// What the file says besides its events.
#[derive(Debug, Default, Clone)]
pub struct PerfFacts {
    /// The clock of the samples (`perf record -k`), by perf's name, when set.
    pub clock: Option<String>,
    /// Records perf lost while recording (PERF_RECORD_LOST: chunks, and lost samples).
    pub lost_chunks: u64,
    pub lost_samples: u64,
    /// Records read.
    pub records: u64,
    /// Events handed over.
    pub events: u64,
}

const MAGIC: u64 = 0x3245_4c49_4652_4550; // "PERFILE2"
const HEADER_TRACING_DATA: usize = 1;

const SAMPLE_IP: u64 = 1;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_ADDR: u64 = 1 << 3;
const SAMPLE_READ: u64 = 1 << 4;
const SAMPLE_CALLCHAIN: u64 = 1 << 5;
const SAMPLE_ID: u64 = 1 << 6;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_PERIOD: u64 = 1 << 8;
const SAMPLE_STREAM_ID: u64 = 1 << 9;
const SAMPLE_RAW: u64 = 1 << 10;
const SAMPLE_IDENTIFIER: u64 = 1 << 16;

const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_SAMPLE: u32 = 9;
const RECORD_LOST_SAMPLES: u32 = 13;
const RECORD_FINISHED_ROUND: u32 = 68;
const RECORD_COMPRESSED: u32 = 81;

#[derive(Clone, Copy, Debug)]
struct Attr {
    ty: u32,
    config: u64,
    sample_type: u64,
    sample_id_all: bool,
    clock: Option<i32>,
}

/// Where a tracepoint's fields are in its raw data.
#[derive(Clone, Copy, Debug, Default)]
struct SwitchFmt {
    prev_comm: (usize, usize),
    prev_pid: usize,
    prev_state: (usize, usize),
    next_comm: (usize, usize),
    next_pid: usize,
    /// `prev_state & mask == 0` is perf's "R" (runnable).
    mask: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct WakeupFmt {
    comm: (usize, usize),
    pid: usize,
    target_cpu: Option<usize>,
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
}

fn le_i32(b: &[u8], at: usize) -> Option<i32> {
    le_u32(b, at).map(|v| v as i32)
}

/// Bytes up to the first NUL.
fn cstr(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    }
}

/// perf's name of a clock id (`perf record -k`).
fn clock_name(id: i32) -> String {
    match id {
        0 => "realtime".into(),
        1 => "monotonic".into(),
        2 => "process_cputime_id".into(),
        3 => "thread_cputime_id".into(),
        4 => "monotonic_raw".into(),
        5 => "realtime_coarse".into(),
        6 => "monotonic_coarse".into(),
        7 => "boottime".into(),
        11 => "tai".into(),
        n => format!("clock {n}"),
    }
}

struct Header {
    attrs: Vec<(Attr, Vec<u64>)>,
    data: (u64, u64),
    features: [u64; 4],
}

fn read_at(f: &mut File, off: u64, len: u64, what: &str) -> Result<Vec<u8>, PerfError> {
    let mut buf = vec![0u8; usize::try_from(len).map_err(|_| PerfError::Bad(format!("{what} too large")))?];
    f.seek(SeekFrom::Start(off)).map_err(|e| PerfError::Bad(format!("{what}: {e}")))?;
    f.read_exact(&mut buf).map_err(|e| PerfError::Bad(format!("{what} cannot be read ({e}): the file is truncated")))?;
    Ok(buf)
}

fn read_header(f: &mut File) -> Result<Header, PerfError> {
    let h = read_at(f, 0, 104, "the header")?;
    let magic = le_u64(&h, 0).unwrap_or(0);
    if magic != MAGIC {
        return Err(if magic.swap_bytes() == MAGIC {
            PerfError::Unsupported("written on a machine of the other byte order".into())
        } else if &h[..8] == b"PERFILE2" {
            PerfError::Unsupported("unexpected header".into())
        } else {
            PerfError::Bad("not a perf.data file (no PERFILE2 magic)".into())
        });
    }
    let size = le_u64(&h, 8).unwrap_or(0);
    if size != 104 {
        return Err(PerfError::Unsupported(format!("a header of {size} bytes (pipe mode?)")));
    }
    let attr_size = le_u64(&h, 16).unwrap_or(0);
    let (attrs_off, attrs_len) = (le_u64(&h, 24).unwrap_or(0), le_u64(&h, 32).unwrap_or(0));
    let data = (le_u64(&h, 40).unwrap_or(0), le_u64(&h, 48).unwrap_or(0));
    let mut features = [0u64; 4];
    for (i, x) in features.iter_mut().enumerate() {
        *x = le_u64(&h, 72 + 8 * i).unwrap_or(0);
    }
    if attr_size < 16 + 96 || attrs_len % attr_size != 0 || attrs_len / attr_size > 4096 {
        return Err(PerfError::Bad(format!("event attributes of {attr_size} bytes each, {attrs_len} in all")));
    }
    let raw = read_at(f, attrs_off, attrs_len, "the event attributes")?;
    let mut attrs = Vec::new();
    for a in raw.chunks(attr_size as usize) {
        let ea = &a[..a.len() - 16];
        let flags = le_u64(ea, 40).unwrap_or(0);
        let use_clockid = flags & (1 << 25) != 0;
        let attr = Attr {
            ty: le_u32(ea, 0).unwrap_or(0),
            config: le_u64(ea, 8).unwrap_or(0),
            sample_type: le_u64(ea, 24).unwrap_or(0),
            sample_id_all: flags & (1 << 18) != 0,
            clock: if use_clockid { le_i32(ea, 92) } else { None },
        };
        let (ids_off, ids_len) = (le_u64(a, a.len() - 16).unwrap_or(0), le_u64(a, a.len() - 8).unwrap_or(0));
        let ids_raw = if ids_len > 0 { read_at(f, ids_off, ids_len.min(1 << 24), "the sample ids")? } else { vec![] };
        let ids = ids_raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        attrs.push((attr, ids));
    }
    Ok(Header { attrs, data, features })
}

/// The bytes of feature section `feat`, if the file has it.
fn feature(f: &mut File, h: &Header, feat: usize) -> Result<Option<Vec<u8>>, PerfError> {
    let bit = |i: usize| h.features[i / 64] & (1 << (i % 64)) != 0;
    if !bit(feat) {
        return Ok(None);
    }
    let before = (0..feat).filter(|&i| bit(i)).count() as u64;
    let sec = read_at(f, h.data.0 + h.data.1 + 16 * before, 16, "a feature section")?;
    let (off, len) = (le_u64(&sec, 0).unwrap_or(0), le_u64(&sec, 8).unwrap_or(0));
    if len > 1 << 30 {
        return Err(PerfError::Bad("a feature section larger than 1 GiB".into()));
    }
    read_at(f, off, len, "the tracing data").map(Some)
}

/// A cursor over the tracing-data feature.
struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn cstr(&mut self) -> Option<&'a [u8]> {
        let rest = self.b.get(self.at..)?;
        let n = rest.iter().position(|&c| c == 0)?;
        self.at += n + 1;
        Some(&rest[..n])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|s| u32::from_le_bytes(s.try_into().expect("4")))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|s| u64::from_le_bytes(s.try_into().expect("8")))
    }
}

/// The sched tracepoints' format texts, by event name, from the tracing data.
fn sched_formats(td: &[u8]) -> Option<FxHashMap<String, String>> {
    let mut c = Cur { b: td, at: 0 };
    if c.take(3)? != [0x17, 0x08, 0x44] || c.take(7)? != b"tracing" {
        return None;
    }
    let version: f64 = std::str::from_utf8(c.cstr()?).ok()?.parse().ok()?;
    let big_endian = c.take(1)?[0];
    let _long_size = c.take(1)?;
    let _page_size = c.u32()?;
    if big_endian != 0 {
        return None;
    }
    if c.cstr()? != b"header_page" {
        return None;
    }
    let n = c.u64()? as usize;
    c.take(n)?;
    if c.cstr()? != b"header_event" {
        return None;
    }
    let n = c.u64()? as usize;
    c.take(n)?;
    for _ in 0..c.u32()? {
        let n = c.u64()? as usize;
        c.take(n)?;
    }
    let mut out = FxHashMap::default();
    for _ in 0..c.u32()? {
        let system = c.cstr()?.to_vec();
        for _ in 0..c.u32()? {
            let n = c.u64()? as usize;
            let text = c.take(n)?;
            if system == b"sched" {
                let t = String::from_utf8_lossy(text).into_owned();
                if let Some(name) = t.lines().find_map(|l| l.strip_prefix("name: ")) {
                    out.insert(name.trim().to_string(), t.clone());
                }
            }
        }
    }
    let _ = version;
    Some(out)
}

/// A format's id and its fields: name -> (offset, size).
fn fields(fmt: &str) -> (Option<u64>, FxHashMap<String, (usize, usize)>) {
    let mut id = None;
    let mut out = FxHashMap::default();
    for l in fmt.lines() {
        let l = l.trim();
        if let Some(x) = l.strip_prefix("ID:") {
            id = x.trim().parse().ok();
        }
        let Some(rest) = l.strip_prefix("field:") else { continue };
        let parts: Vec<&str> = rest.split(';').map(str::trim).collect();
        let decl = parts.first().copied().unwrap_or("");
        let name = decl.split_whitespace().last().unwrap_or("").split('[').next().unwrap_or("").to_string();
        let num = |k: &str| parts.iter().find_map(|p| p.strip_prefix(k)).and_then(|v| v.trim().parse::<usize>().ok());
        if let (Some(off), Some(size)) = (num("offset:"), num("size:")) {
            out.insert(name, (off, size));
        }
    }
    (id, out)
}

/// The mask of `prev_state` under which perf prints "R": the expression after
/// the first `REC->prev_state & ` of the print format, evaluated.
fn runnable_mask(fmt: &str) -> Option<u64> {
    let pf = fmt.split("print fmt:").nth(1)?;
    let at = pf.find("REC->prev_state & ")? + "REC->prev_state & ".len();
    let rest = pf[at..].trim_start();
    if !rest.starts_with('(') {
        return None;
    }
    let mut depth = 0usize;
    let mut end = None;
    for (i, ch) in rest.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let v = Expr::parse(&rest[..end?])?;
    (v > 0).then_some(v as u64)
}

/// A tiny evaluator of the integer expressions of kernel print formats
/// (numbers, `| & + - << >>`, parentheses), with C's precedence.
struct Expr<'a> {
    s: &'a [u8],
    at: usize,
}

impl Expr<'_> {
    fn parse(s: &str) -> Option<i128> {
        let mut e = Expr { s: s.as_bytes(), at: 0 };
        let v = e.or()?;
        e.ws();
        (e.at == e.s.len()).then_some(v)
    }
    fn ws(&mut self) {
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }
    fn eat(&mut self, tok: &str) -> bool {
        self.ws();
        if self.s[self.at..].starts_with(tok.as_bytes()) {
            self.at += tok.len();
            true
        } else {
            false
        }
    }
    fn or(&mut self) -> Option<i128> {
        let mut v = self.and()?;
        while self.peek_op("|") {
            self.at += 1;
            v |= self.and()?;
        }
        Some(v)
    }
    fn and(&mut self) -> Option<i128> {
        let mut v = self.shift()?;
        while self.peek_op("&") {
            self.at += 1;
            v &= self.shift()?;
        }
        Some(v)
    }
    /// `op` next, and not the first character of a two-character operator.
    fn peek_op(&mut self, op: &str) -> bool {
        self.ws();
        self.s[self.at..].starts_with(op.as_bytes()) && !self.s[self.at..].starts_with(format!("{op}{op}").as_bytes())
    }
    fn shift(&mut self) -> Option<i128> {
        let mut v = self.sum()?;
        loop {
            if self.eat("<<") {
                v = v.checked_shl(u32::try_from(self.sum()?).ok()?)?;
            } else if self.eat(">>") {
                v = v.checked_shr(u32::try_from(self.sum()?).ok()?)?;
            } else {
                return Some(v);
            }
        }
    }
    fn sum(&mut self) -> Option<i128> {
        let mut v = self.atom()?;
        loop {
            if self.eat("+") {
                v = v.checked_add(self.atom()?)?;
            } else if self.eat("-") {
                v = v.checked_sub(self.atom()?)?;
            } else {
                return Some(v);
            }
        }
    }
    fn atom(&mut self) -> Option<i128> {
        if self.eat("(") {
            let v = self.or()?;
            return self.eat(")").then_some(v);
        }
        self.ws();
        let start = self.at;
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric()) {
            self.at += 1;
        }
        let tok = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        let tok = tok.trim_end_matches(['U', 'L', 'u', 'l']);
        if let Some(h) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
            i128::from_str_radix(h, 16).ok()
        } else {
            tok.parse().ok()
        }
    }
}

/// The fields of one sample this reader uses.
struct Sample<'a> {
    tid: Option<(u32, u32)>,
    time: Option<u64>,
    cpu: Option<u32>,
    raw: Option<&'a [u8]>,
}

/// Where one sample's fields are, for an attribute's sample type.
fn sample_fields(st: u64, b: &[u8]) -> Option<Sample<'_>> {
    let mut at = 0usize;
    let mut tid = None;
    let mut time = None;
    let mut cpu = None;
    let mut raw = None;
    if st & SAMPLE_IDENTIFIER != 0 {
        at += 8;
    }
    if st & SAMPLE_IP != 0 {
        at += 8;
    }
    if st & SAMPLE_TID != 0 {
        tid = Some((le_u32(b, at)?, le_u32(b, at + 4)?));
        at += 8;
    }
    if st & SAMPLE_TIME != 0 {
        time = Some(le_u64(b, at)?);
        at += 8;
    }
    if st & SAMPLE_ADDR != 0 {
        at += 8;
    }
    if st & SAMPLE_ID != 0 {
        at += 8;
    }
    if st & SAMPLE_STREAM_ID != 0 {
        at += 8;
    }
    if st & SAMPLE_CPU != 0 {
        cpu = Some(le_u32(b, at)?);
        at += 8;
    }
    if st & SAMPLE_PERIOD != 0 {
        at += 8;
    }
    if st & SAMPLE_CALLCHAIN != 0 {
        let n = le_u64(b, at)? as usize;
        at = at.checked_add(8)?.checked_add(n.checked_mul(8)?)?;
    }
    if st & SAMPLE_RAW != 0 {
        let n = le_u32(b, at)? as usize;
        raw = Some(b.get(at + 4..at + 4 + n)?);
    }
    Some(Sample { tid, time, cpu, raw })
}

/// The time of a non-sample record (its trailing sample id), when the
/// attribute says it has one.
fn id_time(st: u64, b: &[u8]) -> Option<(u64, Option<u32>)> {
    let mut size = 0usize;
    for bit in [SAMPLE_TID, SAMPLE_TIME, SAMPLE_ID, SAMPLE_STREAM_ID, SAMPLE_CPU, SAMPLE_IDENTIFIER] {
        if st & bit != 0 {
            size += 8;
        }
    }
    let mut at = b.len().checked_sub(size)?;
    if st & SAMPLE_TID != 0 {
        at += 8;
    }
    if st & SAMPLE_TIME == 0 {
        return None;
    }
    let time = le_u64(b, at)?;
    at += 8;
    for bit in [SAMPLE_ID, SAMPLE_STREAM_ID] {
        if st & bit != 0 {
            at += 8;
        }
    }
    let cpu = if st & SAMPLE_CPU != 0 { le_u32(b, at) } else { None };
    Some((time, cpu))
}

/// An event kept in the ordering queue until its round is handed out.
#[derive(Clone, Copy)]
struct Queued {
    time: u64,
    order: u64,
    cpu: u32,
    kind: Kind,
    pid: u32,
    a: (i64, [u8; 16]),
    b: (i64, [u8; 16]),
    runnable: bool,
    target: Option<i64>,
}

fn comm16(b: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    let s = cstr(b);
    let n = s.len().min(15);
    out[..n].copy_from_slice(&s[..n]);
    out
}

fn deliver(q: &Queued, map: &dyn Fn(i64) -> i64, sink: &mut dyn FnMut(&RawEvent)) {
    let ts = map(q.time as i64);
    let ev = match q.kind {
        Kind::Switch => {
            RawEvent::switch(ts, q.cpu as i64, Some(q.pid as i32 as i64), (q.a.0, q.runnable, cstr(&q.a.1)), (q.b.0, cstr(&q.b.1)))
        }
        kind => RawEvent::task(ts, q.cpu as i64, kind, q.a.0, q.target, cstr(&q.a.1)),
    };
    sink(&ev);
}

/// What reading a file's records needs from its header and tracing data.
struct Layout {
    attrs: Vec<Attr>,
    by_id: FxHashMap<u64, usize>,
    one: bool,
    sw_id: u64,
    sw: SwitchFmt,
    wk_id: Option<u64>,
    wk: WakeupFmt,
}

fn is_tp(a: &Attr, id: u64) -> bool {
    a.ty == 2 && a.config == id
}

fn layout(f: &mut File, h: &Header) -> Result<Layout, PerfError> {
    let td = feature(f, h, HEADER_TRACING_DATA)?.ok_or_else(|| PerfError::Unsupported("no tracing data".into()))?;
    let fmts = sched_formats(&td).ok_or_else(|| PerfError::Unsupported("tracing data of an unknown layout".into()))?;
    let sw_text = fmts.get("sched_switch").ok_or(PerfError::NoSched)?;
    let (sw_id, sw) = fields(sw_text);
    let sw_id = sw_id.ok_or(PerfError::NoSched)?;
    let get = |m: &FxHashMap<String, (usize, usize)>, k: &str| m.get(k).copied();
    let sw = match (
        get(&sw, "prev_comm"),
        get(&sw, "prev_pid"),
        get(&sw, "prev_state"),
        get(&sw, "next_comm"),
        get(&sw, "next_pid"),
        runnable_mask(sw_text),
    ) {
        (Some(pc), Some(pp), Some(ps), Some(nc), Some(np), Some(mask)) if pp.1 == 4 && np.1 == 4 && (ps.1 == 8 || ps.1 == 4) => {
            SwitchFmt { prev_comm: pc, prev_pid: pp.0, prev_state: ps, next_comm: nc, next_pid: np.0, mask }
        }
        _ => return Err(PerfError::Unsupported("a sched_switch format this reader does not know".into())),
    };
    let (wk_id, wk) = match fmts.get("sched_wakeup").map(|t| fields(t)) {
        Some((Some(id), w)) => match (get(&w, "comm"), get(&w, "pid")) {
            (Some(c), Some(p)) if p.1 == 4 => (Some(id), WakeupFmt { comm: c, pid: p.0, target_cpu: get(&w, "target_cpu").map(|x| x.0) }),
            _ => return Err(PerfError::Unsupported("a sched_wakeup format this reader does not know".into())),
        },
        _ => (None, WakeupFmt::default()),
    };
    let mut by_id: FxHashMap<u64, usize> = FxHashMap::default();
    for (i, (a, ids)) in h.attrs.iter().enumerate() {
        if a.sample_type & SAMPLE_READ != 0 {
            return Err(PerfError::Unsupported("samples with read values".into()));
        }
        for &id in ids {
            by_id.insert(id, i);
        }
    }
    if !h.attrs.iter().any(|(a, _)| is_tp(a, sw_id)) {
        return Err(PerfError::NoSched);
    }
    let one = h.attrs.len() == 1;
    if !one && h.attrs.iter().any(|(a, _)| a.sample_type & SAMPLE_IDENTIFIER == 0) {
        return Err(PerfError::Unsupported("several events without sample identifiers".into()));
    }
    Ok(Layout { attrs: h.attrs.iter().map(|(a, _)| *a).collect(), by_id, one, sw_id, sw, wk_id, wk })
}

impl Layout {
    /// The attribute a record belongs to (by its sample id).
    fn attr_of(&self, b: &[u8], sample: bool) -> Option<&Attr> {
        if self.one {
            return self.attrs.first();
        }
        let id = if sample { le_u64(b, 0)? } else { le_u64(b, b.len().checked_sub(8)?)? };
        self.by_id.get(&id).map(|&i| &self.attrs[i])
    }

    /// A sched_switch or sched_wakeup sample, as queued; None for other samples.
    fn sample(&self, body: &[u8], order: u64) -> Result<Option<Queued>, PerfError> {
        let Some(a) = self.attr_of(body, true) else { return Ok(None) };
        let is_sw = is_tp(a, self.sw_id);
        if !is_sw && !self.wk_id.is_some_and(|w| is_tp(a, w)) {
            return Ok(None);
        }
        let Some(Sample { tid: Some((pid, _tid)), time: Some(time), cpu, raw: Some(raw) }) = sample_fields(a.sample_type, body) else {
            return Err(PerfError::Bad("a sched sample without its time, task or raw data".into()));
        };
        let cpu = cpu.unwrap_or(0);
        if is_sw {
            let s = &self.sw;
            let state = match s.prev_state.1 {
                8 => le_u64(raw, s.prev_state.0),
                _ => le_u32(raw, s.prev_state.0).map(u64::from),
            };
            let (Some(pp), Some(np), Some(state), Some(pc), Some(nc)) = (
                le_i32(raw, s.prev_pid),
                le_i32(raw, s.next_pid),
                state,
                raw.get(s.prev_comm.0..s.prev_comm.0 + s.prev_comm.1),
                raw.get(s.next_comm.0..s.next_comm.0 + s.next_comm.1),
            ) else {
                return Err(PerfError::Bad("a sched_switch sample shorter than its format".into()));
            };
            return Ok(Some(Queued {
                time,
                order,
                cpu,
                kind: Kind::Switch,
                pid,
                a: (pp as i64, comm16(pc)),
                b: (np as i64, comm16(nc)),
                runnable: state & s.mask == 0,
                target: None,
            }));
        }
        let w = &self.wk;
        let (Some(p), Some(c)) = (le_i32(raw, w.pid), raw.get(w.comm.0..w.comm.0 + w.comm.1)) else {
            return Err(PerfError::Bad("a sched_wakeup sample shorter than its format".into()));
        };
        let target = w.target_cpu.and_then(|o| le_i32(raw, o)).map(i64::from);
        Ok(Some(Queued { time, order, cpu, kind: Kind::Wakeup, pid, a: (p as i64, comm16(c)), b: (0, [0; 16]), runnable: false, target }))
    }

    /// A COMM record with a time (a rename), as queued.
    fn comm(&self, body: &[u8], order: u64) -> Option<Queued> {
        let a = self.attr_of(body, false)?;
        if !a.sample_id_all {
            return None;
        }
        let (time, cpu) = id_time(a.sample_type, body)?;
        if time == 0 {
            return None; // perf's names of the tasks alive when it started
        }
        let (tid, name) = (le_u32(body, 4)?, body.get(8..)?);
        Some(Queued {
            time,
            order,
            cpu: cpu.unwrap_or(0),
            kind: Kind::Rename,
            pid: le_u32(body, 0).unwrap_or(0),
            a: (tid as i32 as i64, comm16(name)),
            b: (0, [0; 16]),
            runnable: false,
            target: None,
        })
    }
}

/// Reads the sched events of perf.data `path` and hands them to `sink` in
/// `perf script`'s order, their times mapped by `map`.
pub fn read_perf(path: &str, map: &dyn Fn(i64) -> i64, sink: &mut dyn FnMut(&RawEvent)) -> Result<PerfFacts, PerfError> {
    let mut f = File::open(path).map_err(|e| PerfError::Bad(format!("cannot open it: {e}")))?;
    let h = read_header(&mut f)?;
    let lay = layout(&mut f, &h)?;
    let clock = lay.attrs.iter().find(|a| is_tp(a, lay.sw_id)).and_then(|a| a.clock).map(clock_name);
    let mut facts = PerfFacts { clock, ..Default::default() };
    f.seek(SeekFrom::Start(h.data.0)).map_err(|e| PerfError::Bad(format!("the data section: {e}")))?;
    let mut r = BufReader::with_capacity(1 << 20, f.take(h.data.1));
    let mut queue: Vec<Queued> = Vec::new();
    let (mut next_flush, mut max_time, mut order) = (0u64, 0u64, 0u64);
    let mut rec = vec![0u8; 1 << 16];
    loop {
        let mut hdr = [0u8; 8];
        match r.read_exact(&mut hdr) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(PerfError::Bad(format!("the data section cannot be read: {e}"))),
        }
        let ty = u32::from_le_bytes(hdr[0..4].try_into().expect("4"));
        let size = u16::from_le_bytes(hdr[6..8].try_into().expect("2")) as usize;
        if size < 8 {
            return Err(PerfError::Bad(format!("a record of {size} bytes in the data section: the file is damaged")));
        }
        r.read_exact(&mut rec[..size - 8])
            .map_err(|_| PerfError::Bad("the data section ends inside a record: the file is truncated".into()))?;
        let body = &rec[..size - 8];
        facts.records += 1;
        let q = match ty {
            RECORD_SAMPLE => lay.sample(body, order)?,
            RECORD_COMM => lay.comm(body, order),
            RECORD_LOST => {
                facts.lost_chunks += 1;
                None
            }
            RECORD_LOST_SAMPLES => {
                facts.lost_samples += le_u64(body, 0).unwrap_or(0);
                None
            }
            RECORD_FINISHED_ROUND => {
                flush(&mut queue, next_flush, map, sink, &mut facts);
                next_flush = max_time;
                None
            }
            RECORD_COMPRESSED => return Err(PerfError::Unsupported("compressed records (perf record -z)".into())),
            _ => None,
        };
        if let Some(q) = q {
            order += 1;
            max_time = max_time.max(q.time);
            queue.push(q);
        }
    }
    flush(&mut queue, u64::MAX, map, sink, &mut facts);
    Ok(facts)
}

/// Hands out the queued events up to `limit`, by time (equal times in file order).
fn flush(queue: &mut Vec<Queued>, limit: u64, map: &dyn Fn(i64) -> i64, sink: &mut dyn FnMut(&RawEvent), facts: &mut PerfFacts) {
    queue.sort_by_key(|q| (q.time, q.order));
    let n = queue.partition_point(|q| q.time <= limit);
    for q in &queue[..n] {
        deliver(q, map, sink);
    }
    facts.events += n as u64;
    queue.drain(..n);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runnable_mask_of_linux_6_1_and_of_an_older_kernel() {
        let new = "print fmt: \"prev_comm=%s\", REC->prev_comm, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | \
                   0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(...) : \"R\"";
        assert_eq!(runnable_mask(new), Some(0xff));
        let old = "print fmt: \"x\", REC->prev_comm, REC->prev_state & (2048-1) ? __print_flags(REC->prev_state & (2048-1)) : \"R\"";
        assert_eq!(runnable_mask(old), Some(2047));
        assert_eq!(runnable_mask("print fmt: \"x\", REC->prev_state & (foo) ? a : b"), None);
    }

    #[test]
    fn fields_of_a_format() {
        let f = "name: sched_wakeup\nID: 374\nformat:\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
                 \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n";
        let (id, m) = fields(f);
        assert_eq!(id, Some(374));
        assert_eq!(m.get("comm"), Some(&(8, 16)));
        assert_eq!(m.get("pid"), Some(&(24, 4)));
    }
}
