//! Decoding one data stream file: packets, then events, into a flat "tape" of
//! values that consumers walk alongside the event's types.

use std::sync::Arc;

use crate::error::Warning;
use crate::metadata::{Metadata, StreamClass};
use crate::types::{Op, Role, Ty};

pub const PACKET_MAGIC: u64 = 0xC1FC_1FC1;
/// An event may not produce more values than this (guards against absurd
/// lengths in damaged data).
const MAX_TAPE: usize = 1 << 24;

/// One decoded value. Strings and text arrays point into the stream file.
#[derive(Debug, Clone, Copy)]
pub enum Val {
    U(u64),
    I(i64),
    F(f64),
    /// Byte offset in the file and length (text arrays: their full length;
    /// consumers cut at the first NUL).
    Str(u64, u32),
    /// Length of a sequence, followed by its elements.
    Len(u32),
    /// Index of a variant's selected option, followed by its value.
    Opt(u32),
}

/// Per-packet facts, for lost-event accounting (see `reader::TraceSet::losses`).
#[derive(Debug, Clone, Default)]
pub struct PacketInfo {
    pub offset: u64,
    /// Packet begin and end, ns of the trace clock.
    pub begin_ns: Option<u64>,
    pub end_ns: Option<u64>,
    pub seq_num: Option<u64>,
    /// The tracer's cumulative discarded-events counter for this stream.
    pub events_discarded: Option<u64>,
}

struct DErr(String);

type DResult<T> = std::result::Result<T, DErr>;

pub struct StreamReader {
    pub path: String,
    pub trace: usize,
    pub md: Arc<Metadata>,
    data: memmap2::Mmap,
    /// Next packet's byte offset.
    next_packet: u64,
    /// Bytes before this offset have been handed back to the kernel (see
    /// `release_behind`).
    released: u64,
    // current packet, in bits from the start of the file
    pkt: u64,
    end: u64,
    pos: u64,
    pub sc: usize,
    pub stream_class_id: u64,
    pub stream_instance_id: Option<u64>,
    /// Event class index by event id for this stream class (dense table).
    class_by_id: Vec<u32>,
    clock: u64,
    clock_ns_div: Option<u64>,
    event_id: u64,
    regs: Vec<u64>,
    /// Array elements visited for the current event or packet header (bounds
    /// the work on arrays of zero-size elements).
    work: u64,
    pub tape: Vec<Val>,
    hdr_tape: Vec<Val>,
    /// Tape index where the event context and the payload begin.
    pub ctx_start: usize,
    pub payload_start: usize,
    pub cur_class: usize,
    /// Timestamp (ns, the clock's own origin) of the current event.
    pub cur_ts: u64,
    pub has_event: bool,
    pub done: bool,
    pub events_read: u64,
    /// Non-bookkeeping packet-context fields of the current packet (e.g. cpu_id).
    pub packet_fields: Vec<(String, u64)>,
    pub packets: u64,
    /// Every packet's bookkeeping facts, in file order.
    pub packet_log: Vec<PacketInfo>,
    pub first_ts: Option<u64>,
    pub last_ts: Option<u64>,
    pub warnings: Vec<Warning>,
}

const BOOKKEEPING: &[&str] = &["timestamp_begin", "timestamp_end", "content_size", "packet_size", "packet_seq_num", "events_discarded"];

impl StreamReader {
    pub fn open(path: &std::path::Path, trace: usize, md: Arc<Metadata>) -> std::result::Result<Self, String> {
        let f = std::fs::File::open(path).map_err(|e| format!("{}: {}", path.display(), e))?;
        // SAFETY: the file is only read; a trace being written concurrently may
        // change under us, which at worst yields decode errors (bounds are checked).
        let data = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| format!("{}: cannot map: {}", path.display(), e))?;
        // Read front to back: let the kernel read ahead.
        let _ = data.advise(memmap2::Advice::Sequential);
        let freq = md.main_clock().map(|c| c.freq).unwrap_or(1_000_000_000);
        let nregs = md.nregs as usize;
        Ok(StreamReader {
            path: path.display().to_string(),
            trace,
            md,
            data,
            next_packet: 0,
            released: 0,
            pkt: 0,
            end: 0,
            pos: 0,
            sc: 0,
            stream_class_id: 0,
            stream_instance_id: None,
            class_by_id: Vec::new(),
            clock: 0,
            clock_ns_div: if freq == 1_000_000_000 { None } else { Some(freq) },
            event_id: 0,
            regs: vec![0; nregs.max(1)],
            work: 0,
            tape: Vec::with_capacity(64),
            hdr_tape: Vec::with_capacity(8),
            ctx_start: 0,
            payload_start: 0,
            cur_class: 0,
            cur_ts: 0,
            has_event: false,
            done: false,
            events_read: 0,
            packet_fields: Vec::new(),
            packets: 0,
            packet_log: Vec::new(),
            first_ts: None,
            last_ts: None,
            warnings: Vec::new(),
        })
    }

    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Bytes of the file read so far (up to the end of the current packet).
    pub fn consumed(&self) -> u64 {
        if self.done {
            self.data.len() as u64
        } else {
            self.next_packet.min(self.data.len() as u64)
        }
    }

    pub fn file_len(&self) -> u64 {
        self.data.len() as u64
    }

    #[inline]
    fn to_ns(&self, cycles: u64) -> u64 {
        match self.clock_ns_div {
            None => cycles,
            Some(f) => ((cycles as u128) * 1_000_000_000u128 / f as u128) as u64,
        }
    }

    fn warn(&mut self, offset: u64, msg: String) {
        self.warnings.push(Warning { file: self.path.clone(), offset: Some(offset), msg });
    }

    /// Reads the next event. Returns false at the end of the stream (or after
    /// an error, which is recorded as a warning).
    pub fn advance(&mut self) -> bool {
        self.has_event = false;
        if self.done {
            return false;
        }
        loop {
            if self.pos >= self.end {
                match self.open_packet() {
                    Ok(true) => continue,
                    Ok(false) => {
                        self.done = true;
                        return false;
                    }
                    Err(DErr(msg)) => {
                        let off = self.pos / 8;
                        self.warn(off, msg);
                        self.done = true;
                        return false;
                    }
                }
            }
            let start = self.pos;
            match self.read_event() {
                Ok(()) if self.pos == start => {
                    self.warn(
                        start / 8,
                        "event occupies no bits (no event header and no fields); the rest of this stream is skipped".into(),
                    );
                    self.done = true;
                    return false;
                }
                Ok(()) => {
                    self.has_event = true;
                    self.events_read += 1;
                    if self.first_ts.is_none() {
                        self.first_ts = Some(self.cur_ts);
                    }
                    self.last_ts = Some(self.cur_ts);
                    return true;
                }
                Err(DErr(msg)) => {
                    self.warn(start / 8, format!("event cannot be decoded ({}); the rest of this stream is skipped", msg));
                    self.done = true;
                    return false;
                }
            }
        }
    }

    /// Hands the pages of packets already read back to the kernel, so that the
    /// resident memory of a reader stays bounded whatever the trace's size (the
    /// mapping is read-only and file-backed: nothing is lost, pages are read
    /// again from the page cache if ever touched).
    fn release_behind(&mut self, upto: u64) {
        const CHUNK: u64 = 8 << 20;
        const PAGE: u64 = 4096;
        let end = upto / PAGE * PAGE;
        if end >= self.released + CHUNK {
            // SAFETY: no reference into [released, end) outlives this call:
            // values of the current event point into the current packet only,
            // which starts at or after `upto`.
            let _ = unsafe {
                self.data.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, self.released as usize, (end - self.released) as usize)
            };
            self.released = end;
        }
    }

    fn open_packet(&mut self) -> DResult<bool> {
        let file_len = self.data.len() as u64;
        let upto = self.next_packet;
        self.release_behind(upto);
        if self.next_packet >= file_len {
            return Ok(false);
        }
        let off = self.next_packet;
        self.pkt = off * 8;
        self.pos = self.pkt;
        self.end = file_len * 8;
        self.work = 0;
        let md = self.md.clone();
        let mut tape = std::mem::take(&mut self.tape);
        tape.clear();
        // Packet header.
        let mut stream_id: Option<u64> = None;
        if let Some(ph) = &md.packet_header {
            self.dec(ph, &mut tape).map_err(|DErr(m)| DErr(format!("packet header cannot be read ({})", m)))?;
            let fields = top_level_uints(ph, &tape);
            for (name, v) in &fields {
                match (name.as_str(), v) {
                    ("magic", Some(m)) if *m != PACKET_MAGIC => {
                        self.pos = self.pkt;
                        return Err(DErr(format!("wrong packet magic number 0x{:08x} (expected 0x{:08x})", m, PACKET_MAGIC)));
                    }
                    ("stream_id", Some(s)) => stream_id = Some(*s),
                    ("stream_instance_id", Some(s)) => self.stream_instance_id = Some(*s),
                    _ => {}
                }
            }
            if let Some(uuid) = md.uuid {
                if let Some(u) = top_level_bytes(ph, &tape, "uuid") {
                    if u.len() == 16 && u[..] != uuid[..] {
                        self.pos = self.pkt;
                        return Err(DErr("packet UUID does not match the trace's metadata UUID".into()));
                    }
                }
            }
        }
        let sid = stream_id.unwrap_or_else(|| md.streams.first().map(|s| s.id).unwrap_or(0));
        let sc_idx = md.streams.iter().position(|s| s.id == sid).ok_or_else(|| {
            self.pos = self.pkt;
            DErr(format!("packet names stream class {}, which the metadata does not declare", sid))
        })?;
        if self.packets > 0 && sc_idx != self.sc {
            self.pos = self.pkt;
            return Err(DErr(format!("packet names stream class {} but earlier packets of this file had {}", sid, self.stream_class_id)));
        }
        if self.packets == 0 {
            self.sc = sc_idx;
            self.stream_class_id = sid;
            self.class_by_id = dense_ids(&md.streams[sc_idx]);
        }
        // Packet context.
        let sc = &md.streams[sc_idx];
        let mut content_bits: Option<u64> = None;
        let mut packet_bits: Option<u64> = None;
        let mut info = PacketInfo { offset: off, ..Default::default() };
        let (mut ts_begin, mut ts_end) = (None, None);
        self.packet_fields.clear();
        if let Some(pc) = &sc.packet_context {
            tape.clear();
            self.dec(pc, &mut tape).map_err(|DErr(m)| DErr(format!("packet context cannot be read ({})", m)))?;
            for (name, v) in top_level_uints(pc, &tape) {
                let Some(v) = v else { continue };
                match name.as_str() {
                    "content_size" => content_bits = Some(v),
                    "packet_size" => packet_bits = Some(v),
                    "timestamp_begin" => ts_begin = Some(v),
                    "timestamp_end" => ts_end = Some(v),
                    "packet_seq_num" => info.seq_num = Some(v),
                    "events_discarded" => info.events_discarded = Some(v),
                    _ => {}
                }
                if !BOOKKEEPING.contains(&name.as_str()) {
                    self.packet_fields.push((name, v));
                }
            }
        }
        self.tape = tape;
        let remaining_bits = (file_len - off) * 8;
        let packet_bits = packet_bits.unwrap_or(content_bits.unwrap_or(remaining_bits));
        let content_bits = content_bits.unwrap_or(packet_bits);
        if packet_bits == 0 || content_bits > packet_bits || !packet_bits.is_multiple_of(8) {
            self.pos = self.pkt;
            return Err(DErr(format!("packet sizes are invalid (content {} bits, packet {} bits)", content_bits, packet_bits)));
        }
        let header_end = self.pos;
        if content_bits < header_end - self.pkt {
            self.pos = self.pkt;
            return Err(DErr(format!("packet content size {} bits is smaller than its header and context", content_bits)));
        }
        self.end = self.pkt.saturating_add(content_bits);
        if packet_bits > file_len * 8 - self.pkt {
            let msg =
                format!("stream file is truncated: the packet declares {} bytes, only {} are present", packet_bits / 8, file_len - off);
            self.warn(off, msg);
            self.end = self.end.min(file_len * 8);
        }
        self.next_packet = off.saturating_add(packet_bits / 8);
        self.packets += 1;
        // Clock at packet start.
        if let Some(tb) = ts_begin {
            self.clock = tb;
        }
        info.begin_ns = ts_begin.map(|t| self.to_ns(t));
        info.end_ns = ts_end.map(|t| self.to_ns(t));
        self.packet_log.push(info);
        Ok(true)
    }

    #[inline]
    fn read_event(&mut self) -> DResult<()> {
        // SAFETY: `self.md` is set at construction and never replaced, so the
        // metadata outlives this call; going through a pointer avoids touching
        // the Arc's counter for every event.
        let md: &Metadata = unsafe { &*Arc::as_ptr(&self.md) };
        let sc = &md.streams[self.sc];
        self.event_id = 0;
        self.work = 0;
        if !sc.event_header_prog.is_empty() {
            let mut ht = std::mem::take(&mut self.hdr_tape);
            ht.clear();
            let r = self.run(&sc.event_header_prog, &mut ht);
            self.hdr_tape = ht;
            r?;
        }
        let id = self.event_id;
        let class = match self.class_by_id.get(id as usize) {
            Some(&c) if c != u32::MAX => c as usize,
            _ => return Err(DErr(format!("unknown event id {} in stream class {}", id, sc.id))),
        };
        self.cur_class = class;
        self.cur_ts = self.to_ns(self.clock);
        let mut tape = std::mem::take(&mut self.tape);
        tape.clear();
        let ec = &md.events[class];
        let mut r = self.run(&sc.event_context_prog, &mut tape);
        self.ctx_start = tape.len();
        if r.is_ok() {
            r = self.run(&ec.context_prog, &mut tape);
        }
        self.payload_start = tape.len();
        if r.is_ok() {
            r = self.run(&ec.payload_prog, &mut tape);
        }
        self.tape = tape;
        r
    }

    /// Runs a compiled program (see `types::Op`).
    #[inline]
    fn run(&mut self, prog: &[Op], out: &mut Vec<Val>) -> DResult<()> {
        for op in prog {
            match op {
                Op::Int { size, align, le, signed, role, reg } => {
                    let raw = self.read_bits(*size, *align, *le)?;
                    self.int_done(raw, *size, *signed, *role, *reg, out);
                }
                Op::Align(a) => self.align(*a),
                Op::F32 { align, le } => {
                    let raw = self.read_bits(32, *align, *le)?;
                    out.push(Val::F(f32::from_bits(raw as u32) as f64));
                }
                Op::F64 { align, le } => {
                    let raw = self.read_bits(64, *align, *le)?;
                    out.push(Val::F(f64::from_bits(raw)));
                }
                Op::Str => self.string(out)?,
                Op::Text(len) => self.text_array(*len, out)?,
                Op::Other(t) => self.dec(t, out)?,
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn align(&mut self, a: u32) {
        let a = a as u64;
        if a > 1 {
            let rel = self.pos - self.pkt;
            self.pos = self.pkt + ((rel + a - 1) & !(a - 1));
        }
    }

    #[inline(always)]
    fn read_bits(&mut self, size: u32, align: u32, le: bool) -> DResult<u64> {
        self.align(align);
        let pos = self.pos;
        let end = pos + size as u64;
        if end > self.end {
            return Err(DErr(format!("a {}-bit field runs past the end of the packet content", size)));
        }
        let byte = (pos >> 3) as usize;
        let shift = (pos & 7) as u32;
        let d = &self.data[..];
        let v = if shift == 0 {
            match (size, le) {
                (8, _) => d[byte] as u64,
                (16, true) => u16::from_le_bytes([d[byte], d[byte + 1]]) as u64,
                (32, true) => u32::from_le_bytes(d[byte..byte + 4].try_into().unwrap()) as u64,
                (64, true) => u64::from_le_bytes(d[byte..byte + 8].try_into().unwrap()),
                (16, false) => u16::from_be_bytes([d[byte], d[byte + 1]]) as u64,
                (32, false) => u32::from_be_bytes(d[byte..byte + 4].try_into().unwrap()) as u64,
                (64, false) => u64::from_be_bytes(d[byte..byte + 8].try_into().unwrap()),
                _ => read_bits_slow(d, byte, shift, size, le),
            }
        } else {
            read_bits_slow(d, byte, shift, size, le)
        };
        self.pos = end;
        Ok(v)
    }

    fn dec(&mut self, ty: &Ty, out: &mut Vec<Val>) -> DResult<()> {
        match ty {
            Ty::Int(i) => {
                let raw = self.read_bits(i.size, i.align, i.le)?;
                self.int_done(raw, i.size, i.signed, i.role, i.reg, out);
            }
            Ty::Enum(e) => {
                let i = &e.int;
                let raw = self.read_bits(i.size, i.align, i.le)?;
                self.int_done(raw, i.size, i.signed, i.role, i.reg, out);
            }
            Ty::Float(f) => {
                let size = if f.mant_dig == 24 { 32 } else { 64 };
                let raw = self.read_bits(size, f.align, f.le)?;
                out.push(Val::F(if size == 32 { f32::from_bits(raw as u32) as f64 } else { f64::from_bits(raw) }));
            }
            Ty::Str => self.string(out)?,
            Ty::Struct(s) => {
                self.align(s.align);
                for f in &s.fields {
                    self.dec(&f.ty, out)?;
                }
            }
            Ty::Array { elem, len, text } => {
                if *text {
                    self.text_array(*len, out)?;
                } else {
                    self.check_count(*len, elem, out.len())?;
                    self.align(elem.align());
                    for _ in 0..*len {
                        self.dec(elem, out)?;
                    }
                }
            }
            Ty::Seq { elem, reg, text, .. } => {
                let n = self.regs[*reg as usize];
                if *text {
                    out.push(Val::Len(1));
                    self.text_array(n, out)?;
                } else {
                    self.check_count(n, elem, out.len())?;
                    out.push(Val::Len(n as u32));
                    self.align(elem.align());
                    for _ in 0..n {
                        self.dec(elem, out)?;
                    }
                }
            }
            Ty::Variant(v) => {
                let raw = self.regs[v.reg as usize];
                let tag: i128 = if v.tag_signed { raw as i64 as i128 } else { raw as i128 };
                let Some(&(_, _, idx)) = v.ranges.iter().find(|(lo, hi, _)| *lo <= tag && tag <= *hi) else {
                    return Err(DErr(format!("variant tag '{}' value {} selects no option", v.tag, tag)));
                };
                out.push(Val::Opt(idx));
                self.dec(&v.options[idx as usize].ty, out)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn string(&mut self, out: &mut Vec<Val>) -> DResult<()> {
        self.align(8);
        let byte = (self.pos >> 3) as usize;
        let end = (self.end >> 3) as usize;
        if byte > end {
            return Err(DErr("string starts past the end of the packet content".into()));
        }
        match memchr::memchr(0, &self.data[byte..end]) {
            Some(n) => {
                out.push(Val::Str(byte as u64, n as u32));
                self.pos = ((byte + n + 1) as u64) << 3;
                Ok(())
            }
            None => Err(DErr("string has no terminating NUL before the end of the packet content".into())),
        }
    }

    fn text_array(&mut self, len: u64, out: &mut Vec<Val>) -> DResult<()> {
        self.align(8);
        let bits = len.checked_mul(8).ok_or_else(|| DErr("text length overflows".into()))?;
        if bits > self.end.saturating_sub(self.pos) {
            return Err(DErr(format!("a {}-byte text field runs past the end of the packet content", len)));
        }
        out.push(Val::Str(self.pos >> 3, len as u32));
        self.pos += bits;
        Ok(())
    }

    fn check_count(&mut self, n: u64, elem: &Ty, tape_len: usize) -> DResult<()> {
        let min_bits = min_size_bits(elem);
        let left = self.end.saturating_sub(self.pos);
        if min_bits > 0 && n.saturating_mul(min_bits) > left {
            return Err(DErr(format!("array of {} elements runs past the end of the packet content", n)));
        }
        if tape_len as u64 + n > MAX_TAPE as u64 {
            return Err(DErr(format!("array of {} elements is too large", n)));
        }
        self.work = self.work.saturating_add(n);
        if self.work > MAX_TAPE as u64 {
            return Err(DErr(format!("arrays of more than {} elements in all", MAX_TAPE)));
        }
        Ok(())
    }

    #[inline(always)]
    fn int_done(&mut self, raw: u64, size: u32, signed: bool, role: Role, reg: Option<u32>, out: &mut Vec<Val>) {
        let val = if signed && size < 64 {
            let sh = 64 - size;
            (((raw << sh) as i64) >> sh) as u64
        } else {
            raw
        };
        match role {
            Role::None => {}
            Role::EventId => self.event_id = raw,
            Role::Clock => {
                if size >= 64 {
                    self.clock = raw;
                } else {
                    let mask = (1u64 << size) - 1;
                    let cur = self.clock & mask;
                    let mut n = (self.clock & !mask) | raw;
                    if raw < cur {
                        n = n.wrapping_add(1u64 << size);
                    }
                    self.clock = n;
                }
            }
        }
        if let Some(r) = reg {
            self.regs[r as usize] = val;
        }
        out.push(if signed { Val::I(val as i64) } else { Val::U(val) });
    }
}

#[inline(never)]
fn read_bits_slow(d: &[u8], byte: usize, shift: u32, size: u32, le: bool) -> u64 {
    let nbytes = (shift + size).div_ceil(8) as usize;
    let mut x: u128 = 0;
    if le {
        for k in (0..nbytes).rev() {
            x = (x << 8) | d[byte + k] as u128;
        }
        ((x >> shift) & ((1u128 << size) - 1)) as u64
    } else {
        for k in 0..nbytes {
            x = (x << 8) | d[byte + k] as u128;
        }
        let total = (nbytes * 8) as u32;
        ((x >> (total - shift - size)) & ((1u128 << size) - 1)) as u64
    }
}

/// The smallest number of bits a value of this type occupies.
fn min_size_bits(ty: &Ty) -> u64 {
    match ty {
        Ty::Int(i) => i.size as u64,
        Ty::Enum(e) => e.int.size as u64,
        Ty::Float(f) => {
            if f.mant_dig == 24 {
                32
            } else {
                64
            }
        }
        Ty::Str => 8,
        Ty::Struct(s) => s.fields.iter().map(|f| min_size_bits(&f.ty)).sum(),
        Ty::Array { elem, len, .. } => min_size_bits(elem).saturating_mul(*len),
        Ty::Seq { .. } | Ty::Variant(_) => 0,
    }
}

fn dense_ids(sc: &StreamClass) -> Vec<u32> {
    let max = sc.events.keys().copied().max().unwrap_or(0);
    if max > 1 << 20 {
        // Sparse ids: fall back to a table large enough for those we know.
        let mut v = vec![u32::MAX; (1 << 20) + 1];
        for (&id, &idx) in &sc.events {
            if (id as usize) < v.len() {
                v[id as usize] = idx as u32;
            }
        }
        return v;
    }
    let mut v = vec![u32::MAX; max as usize + 1];
    for (&id, &idx) in &sc.events {
        v[id as usize] = idx as u32;
    }
    v
}

/// Skips over the tape values of one value of type `ty`, starting at `*i`.
pub fn skip(ty: &Ty, tape: &[Val], i: &mut usize) {
    match ty {
        Ty::Int(_) | Ty::Enum(_) | Ty::Float(_) | Ty::Str => *i += 1,
        Ty::Struct(s) => s.fields.iter().for_each(|f| skip(&f.ty, tape, i)),
        Ty::Array { elem, len, text } => {
            if *text {
                *i += 1;
            } else {
                for _ in 0..*len {
                    skip(elem, tape, i);
                }
            }
        }
        Ty::Seq { elem, text, .. } => {
            let n = match tape.get(*i) {
                Some(Val::Len(n)) => *n,
                _ => 0,
            };
            *i += 1;
            if *text {
                *i += 1;
            } else {
                for _ in 0..n {
                    skip(elem, tape, i);
                }
            }
        }
        Ty::Variant(v) => {
            let o = match tape.get(*i) {
                Some(Val::Opt(o)) => *o as usize,
                _ => 0,
            };
            *i += 1;
            if let Some(opt) = v.options.get(o) {
                skip(&opt.ty, tape, i);
            }
        }
    }
}

/// Top-level integer fields of a struct scope, by display name.
fn top_level_uints(ty: &Ty, tape: &[Val]) -> Vec<(String, Option<u64>)> {
    let mut out = Vec::new();
    if let Ty::Struct(s) = ty {
        let mut i = 0;
        for f in &s.fields {
            let v = match (&f.ty, tape.get(i)) {
                (Ty::Int(_), Some(Val::U(v))) | (Ty::Enum(_), Some(Val::U(v))) => Some(*v),
                (Ty::Int(_), Some(Val::I(v))) | (Ty::Enum(_), Some(Val::I(v))) => Some(*v as u64),
                _ => None,
            };
            out.push((f.name.clone(), v));
            skip(&f.ty, tape, &mut i);
        }
    }
    out
}

/// A top-level array-of-bytes field (e.g. the packet header's uuid).
fn top_level_bytes(ty: &Ty, tape: &[Val], name: &str) -> Option<Vec<u8>> {
    if let Ty::Struct(s) = ty {
        let mut i = 0;
        for f in &s.fields {
            if f.name == name {
                if let Ty::Array { len, text: false, .. } = &f.ty {
                    return Some(
                        tape[i..i + *len as usize]
                            .iter()
                            .map(|v| match v {
                                Val::U(x) => *x as u8,
                                Val::I(x) => *x as u8,
                                _ => 0,
                            })
                            .collect(),
                    );
                }
                return None;
            }
            skip(&f.ty, tape, &mut i);
        }
    }
    None
}
