//! Decoding one data stream file: packets, then events, into a flat "tape" of
//! values that consumers walk alongside the event's types.
//!
//! Damage does not end a stream: after a packet that cannot be read (or an
//! event that cannot be decoded) the reader resynchronizes at the next packet,
//! found by LTTng's packet index (`index/<file>.idx`) when there is one, else by
//! the damaged packet's own size, else by the next packet header's magic
//! number; a warning names the file, the byte offset and what was skipped.
//! Event times are checked against the stream: see `check_time`.

use std::path::Path;
use std::sync::Arc;

use crate::error::Warning;
use crate::metadata::{Metadata, StreamClass};
use crate::types::{HeaderFast, Op, Role, SeqOp, Ty, VariantOp};

pub const PACKET_MAGIC: u64 = 0xC1FC_1FC1;
/// Magic number of an LTTng packet index file.
pub const INDEX_MAGIC: u32 = 0xC1F1_DCC1;
/// An event may not produce more values than this (guards against absurd
/// lengths in damaged data).
const MAX_TAPE: usize = 1 << 24;
/// Warnings listed per stream file; further problems are only counted (and
/// the count reported once at the end of the stream).
const MAX_STREAM_WARNINGS: u32 = 64;
/// Bytes of the first packet compared to tell a copied stream file.
const IDENTITY_BYTES: usize = 1 << 16;

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

/// One entry of LTTng's packet index (CTF index format 1.x, big-endian):
/// where a packet starts, its sizes and its time range, as the consumer
/// daemon wrote them when it closed the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// Bytes from the start of the stream file.
    pub offset: u64,
    pub packet_bits: u64,
    pub content_bits: u64,
    /// Clock cycles.
    pub ts_begin: u64,
    pub ts_end: u64,
    pub events_discarded: u64,
}

/// What tells a stream file apart from a copy of another: its trace (the
/// metadata UUID, or the trace's index without one), stream class and
/// instance, and its first packet's sequence number and begin time. Two files
/// with the same identity and the same leading bytes hold the same stream.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamIdentity {
    pub trace: std::result::Result<[u8; 16], usize>,
    pub stream_class: u64,
    pub instance: Option<u64>,
    pub first_seq: Option<u64>,
    pub first_begin: Option<u64>,
}

/// Damage met in one stream file, in all.
#[derive(Debug, Clone, Copy, Default)]
pub struct Damage {
    /// Places where decoding stopped and resumed further on.
    pub resyncs: u64,
    /// Bytes not decoded because of damage.
    pub skipped_bytes: u64,
    /// Whole packets skipped (counted by the index when there is one).
    pub skipped_packets: u64,
    /// Events whose time was outside what the stream allows, and was repaired.
    pub times_repaired: u64,
    /// Packet header fields that disagreed with the index or with the stream
    /// and were replaced.
    pub fields_repaired: u64,
}

/// A decoding error's message, boxed: a `DResult<()>` is one word, returned in a
/// register by the per-event code (a `String` made it three, through memory).
struct DErr(Box<str>);

impl DErr {
    #[cold]
    fn new(msg: String) -> DErr {
        DErr(msg.into_boxed_str())
    }
}

type DResult<T> = std::result::Result<T, DErr>;

/// A packet's header and context, decoded but not yet checked against the
/// stream.
#[derive(Default)]
struct Head {
    stream_id: u64,
    sc_idx: usize,
    instance: Option<u64>,
    /// Bytes of the packet UUID that differ from the metadata's.
    uuid_diff: usize,
    /// A wrong magic number, and a stream id that is not this stream's, when
    /// read leniently (see `parse_head`).
    bad_magic: Option<u64>,
    bad_stream_id: Option<u64>,
    content_bits: Option<u64>,
    packet_bits: Option<u64>,
    ts_begin: Option<u64>,
    ts_end: Option<u64>,
    seq: Option<u64>,
    discarded: Option<u64>,
    fields: Vec<(String, u64)>,
    /// Bits of the header and context.
    header_bits: u64,
}

pub struct StreamReader {
    pub path: String,
    pub trace: usize,
    pub md: Arc<Metadata>,
    data: memmap2::Mmap,
    /// LTTng's packet index for this file (empty without one).
    index: Vec<IndexEntry>,
    index_name: String,
    /// Byte order of the packet header's magic field, when it has one (for
    /// finding packet starts after damage).
    magic_le: Option<bool>,
    /// Next packet's byte offset.
    next_packet: u64,
    /// Where a search for the next packet starts after damage: the end of the
    /// last packet read, or just after the last place reading resumed at.
    resync_from: u64,
    /// The current packet's declared size cannot be trusted: the next packet
    /// is searched from the end of its content.
    next_by_scan: bool,
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
    /// Clock bounds (cycles) of the next event: the previous event's time, and
    /// the packet's end (u64::MAX when unknown or not trusted).
    lo: u64,
    hi: u64,
    /// timestamp_begin (cycles) of the previous packet, as accepted.
    prev_begin: Option<u64>,
    time_warned: bool,
    /// The packet's content size is damaged: its events are read up to the
    /// packet's end, and the first one that makes no sense ends the content.
    content_guessed: bool,
    clock_ns_div: Option<u64>,
    event_id: u64,
    regs: Vec<u64>,
    /// Array elements visited for the current event or packet header (bounds
    /// the work on arrays of zero-size elements).
    work: u64,
    pub tape: Vec<Val>,
    /// Per event class: whether its events' every value is wanted on the tape (empty: all
    /// are). For a class marked false only the first `partial_values` values are kept (the
    /// stream event context: what `info` reads of most events), the rest read and skipped.
    pub whole: Vec<bool>,
    pub partial_values: usize,
    /// Values the current event may put on the tape (`whole`); usize::MAX outside events.
    limit: usize,
    /// Values of the current event read but not put on the tape (for the tape's size bound).
    skipped: usize,
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
    warned: u32,
    unlisted: u32,
    pub damage: Damage,
}

const BOOKKEEPING: &[&str] = &["timestamp_begin", "timestamp_end", "content_size", "packet_size", "packet_seq_num", "events_discarded"];

impl StreamReader {
    pub fn open(path: &Path, trace: usize, md: Arc<Metadata>) -> std::result::Result<Self, String> {
        let f = std::fs::File::open(path).map_err(|e| format!("{}: {}", path.display(), e))?;
        // SAFETY: the file is only read; a trace being written concurrently may
        // change under us, which at worst yields decode errors (bounds are checked).
        let data = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| format!("{}: cannot map: {}", path.display(), e))?;
        // Read front to back: let the kernel read ahead.
        let _ = data.advise(memmap2::Advice::Sequential);
        let freq = md.main_clock().map(|c| c.freq).unwrap_or(1_000_000_000);
        let nregs = md.nregs as usize;
        let magic_le = md.packet_header.as_ref().and_then(magic_byte_order);
        let mut s = StreamReader {
            path: path.display().to_string(),
            trace,
            md,
            data,
            index: Vec::new(),
            index_name: String::new(),
            magic_le,
            next_packet: 0,
            resync_from: 0,
            next_by_scan: false,
            released: 0,
            pkt: 0,
            end: 0,
            pos: 0,
            sc: 0,
            stream_class_id: 0,
            stream_instance_id: None,
            class_by_id: Vec::new(),
            clock: 0,
            lo: 0,
            hi: u64::MAX,
            prev_begin: None,
            time_warned: false,
            content_guessed: false,
            clock_ns_div: if freq == 1_000_000_000 { None } else { Some(freq) },
            event_id: 0,
            regs: vec![0; nregs.max(1)],
            work: 0,
            tape: Vec::with_capacity(64),
            hdr_tape: Vec::with_capacity(8),
            whole: Vec::new(),
            partial_values: 0,
            limit: usize::MAX,
            skipped: 0,
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
            warned: 0,
            unlisted: 0,
            damage: Damage::default(),
        };
        s.load_index(path);
        Ok(s)
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

    /// The packet index in use (empty when the file has none, or it was unusable).
    pub fn index(&self) -> &[IndexEntry] {
        &self.index
    }

    #[inline]
    fn to_ns(&self, cycles: u64) -> u64 {
        match self.clock_ns_div {
            None => cycles,
            Some(f) => ((cycles as u128) * 1_000_000_000u128 / f as u128) as u64,
        }
    }

    fn warn(&mut self, offset: u64, msg: String) {
        if self.warned >= MAX_STREAM_WARNINGS {
            self.unlisted += 1;
            return;
        }
        self.warned += 1;
        self.warnings.push(Warning { file: self.path.clone(), offset: Some(offset), msg });
    }

    /// Reads `index/<file name>.idx` beside the stream file, if there is one.
    /// An index that does not describe this file (entries out of order,
    /// overlapping, or impossible sizes) is not used, with a warning.
    fn load_index(&mut self, path: &Path) {
        let Some(name) = path.file_name() else { return };
        let mut iname = name.to_os_string();
        iname.push(".idx");
        let ipath = path.parent().unwrap_or(Path::new(".")).join("index").join(iname);
        let Ok(bytes) = std::fs::read(&ipath) else { return };
        self.index_name = ipath.display().to_string();
        let file_len = self.data.len() as u64;
        match parse_index(&bytes, file_len) {
            Ok((entries, beyond)) => {
                self.index = entries;
                if beyond > 0 {
                    let msg = format!(
                        "stream file is truncated: it ends at byte {}, and its packet index {} lists {} more packet{} from there",
                        file_len,
                        self.index_name,
                        beyond,
                        if beyond == 1 { "" } else { "s" }
                    );
                    self.warn(file_len, msg);
                }
            }
            Err(why) => {
                let file = self.index_name.clone();
                self.warnings.push(Warning { file, offset: None, msg: format!("packet index not used: {}", why) });
            }
        }
    }

    /// The index entry of the packet at byte `off`.
    fn index_at(&self, off: u64) -> Option<IndexEntry> {
        self.index.binary_search_by_key(&off, |e| e.offset).ok().map(|i| self.index[i])
    }

    /// What identifies this stream against a copy of it (see
    /// `StreamIdentity`), from its first packet; None when that cannot be
    /// read, or says too little (no instance id, sequence number nor time).
    pub fn identity(&mut self) -> Option<StreamIdentity> {
        let head = self.parse_head(0, false).ok();
        self.pos = 0;
        self.pkt = 0;
        self.end = 0;
        let head = head?;
        if head.instance.is_none() && head.seq.is_none() && head.ts_begin.is_none() {
            return None;
        }
        Some(StreamIdentity {
            trace: self.md.uuid.ok_or(self.trace),
            stream_class: head.stream_id,
            instance: head.instance,
            first_seq: head.seq,
            first_begin: head.ts_begin,
        })
    }

    /// Whether this file and `other` begin with the same bytes (up to the
    /// shorter one's length, at most 64 KiB).
    pub fn same_start(&self, other: &StreamReader) -> bool {
        let n = self.data.len().min(other.data.len()).min(IDENTITY_BYTES);
        self.data[..n] == other.data[..n]
    }

    /// Reads the next event. Returns false at the end of the stream. Damage is
    /// recorded as a warning, and reading resumes at the next packet.
    pub fn advance(&mut self) -> bool {
        self.has_event = false;
        if self.done {
            return false;
        }
        loop {
            if self.pos >= self.end {
                let off = self.next_packet;
                match self.open_packet() {
                    Ok(true) => continue,
                    Ok(false) => {
                        self.finish();
                        return false;
                    }
                    Err(DErr(msg)) => {
                        // The packet that failed (not `off` when the previous
                        // packet's size was damaged and it was searched for).
                        let at = self.pkt / 8;
                        debug_assert!(at >= off);
                        self.recover(at, at, false, msg.into_string());
                        continue;
                    }
                }
            }
            let start = self.pos;
            match self.read_event() {
                Ok(()) if self.pos == start => {
                    let msg = "event occupies no bits (no event header and no fields)".to_string();
                    self.recover(self.pkt / 8, start / 8, true, msg);
                }
                Ok(()) => {
                    if self.clock < self.lo || self.clock > self.hi {
                        if self.content_guessed {
                            self.end_guessed_content(start / 8);
                            continue;
                        }
                        self.check_time(start / 8);
                    }
                    self.lo = self.clock;
                    self.has_event = true;
                    self.events_read += 1;
                    if self.first_ts.is_none() {
                        self.first_ts = Some(self.cur_ts);
                    }
                    self.last_ts = Some(self.cur_ts);
                    return true;
                }
                Err(DErr(msg)) => {
                    let msg = format!("event cannot be decoded ({})", msg);
                    self.recover(self.pkt / 8, start / 8, true, msg);
                }
            }
        }
    }

    fn finish(&mut self) {
        self.done = true;
        if self.unlisted > 0 {
            let d = self.damage;
            let msg = format!(
                "{} more problems in this stream are not listed; in all: {} bytes skipped at {} places, {} event times repaired, \
                 {} packet fields repaired",
                self.unlisted, d.skipped_bytes, d.resyncs, d.times_repaired, d.fields_repaired
            );
            self.warnings.push(Warning { file: self.path.clone(), offset: None, msg });
            self.unlisted = 0;
        }
    }

    /// In a packet whose content size is damaged, an event whose time is
    /// outside the packet's: the real content ended before it (what follows is
    /// padding or garbage). Reading goes on at the next packet.
    #[cold]
    fn end_guessed_content(&mut self, at: u64) {
        let end = self.end / 8;
        self.damage.skipped_bytes += end.saturating_sub(at);
        self.warn(
            at,
            format!(
                "the packet's content (whose size is damaged) is taken to end here: the next event's time {} ns is outside the \
                 packet's; {} bytes up to the packet's end are not read",
                self.to_ns(self.clock),
                end.saturating_sub(at)
            ),
        );
        self.clock = self.lo;
        self.pos = self.end;
    }

    /// An event's clock is outside [previous event of this stream, end of its
    /// packet]: its timestamp is damaged (or the packet's begin time was, or
    /// the bytes are not an event at all). The event is kept with the previous
    /// event's time, and the clock restarts from there, so the events after it
    /// get their own times again (they carry only the low bits of their time).
    #[cold]
    fn check_time(&mut self, at: u64) {
        let bad = self.clock;
        self.clock = self.lo;
        self.cur_ts = self.to_ns(self.lo);
        self.damage.times_repaired += 1;
        if !self.time_warned {
            self.time_warned = true;
            let (lo, hi) = (self.to_ns(self.lo), self.to_ns(self.hi));
            let msg = if bad < self.lo {
                format!(
                    "time goes backwards: event at {} ns is {} ns before the previous event of this stream; it is given the \
                     previous event's time {} ns (and so is any later event of this packet that does the same)",
                    self.to_ns(bad),
                    lo - self.to_ns(bad),
                    lo
                )
            } else {
                format!(
                    "event time {} ns is after its packet's end ({} ns): the timestamp is damaged; the event is given the previous \
                     event's time {} ns (and so is any later event of this packet that does the same)",
                    self.to_ns(bad),
                    hi,
                    lo
                )
            };
            self.warn(at, msg);
        }
    }

    /// After damage at byte `at` in the packet starting at byte `pkt_off`:
    /// finds where reading can go on, and says what was skipped.
    /// `header_ok`: the packet's header and context were read, so its declared
    /// size is a candidate for the next packet's place.
    fn recover(&mut self, pkt_off: u64, at: u64, header_ok: bool, what: String) {
        let file_len = self.data.len() as u64;
        let mut how = "";
        let mut resume = None;
        if let Some(e) = self.index.iter().find(|e| e.offset > pkt_off) {
            resume = Some(e.offset);
            how = "by the packet index";
        }
        let by_size = header_ok && !self.next_by_scan && self.next_packet > pkt_off && self.next_packet < file_len;
        if resume.is_none() && by_size && self.probe(self.next_packet) {
            resume = Some(self.next_packet);
            how = "by this packet's size";
        }
        if resume.is_none() {
            // From the end of the last packet read: a packet header that fails
            // may have been reached through a damaged packet size.
            resume = self.scan(self.resync_from, file_len, pkt_off);
            how = "by its header's magic number";
        }
        self.damage.resyncs += 1;
        self.has_event = false;
        self.next_by_scan = false;
        self.end = 0;
        self.pos = 0;
        let Some(r) = resume else {
            let skipped = file_len.saturating_sub(at);
            self.damage.skipped_bytes += skipped;
            self.damage.skipped_packets += !header_ok as u64;
            let msg = if skipped == 0 {
                format!("{}; this is the end of the file", what)
            } else {
                format!("{}; no later packet found: the rest of this stream ({} bytes) is skipped", what, skipped)
            };
            self.warn(at, msg);
            self.next_packet = file_len;
            return;
        };
        let msg = if r > at {
            let skipped = r - at;
            let between = self.index.iter().filter(|e| e.offset > pkt_off && e.offset < r).count() as u64;
            self.damage.skipped_bytes += skipped;
            self.damage.skipped_packets += between + !header_ok as u64;
            format!("{}; {} bytes skipped, reading resumes at byte {} (next packet, found {})", what, skipped, r, how)
        } else {
            format!(
                "{}; reading resumes at byte {}, where a packet starts after the previous one's content (found {}): the previous \
                 packet's size is damaged",
                what, r, how
            )
        };
        self.warn(at, msg);
        self.next_packet = r;
        self.resync_from = r + 1;
    }

    /// Whether a packet that continues this stream starts at byte `off`.
    fn probe(&mut self, off: u64) -> bool {
        let saved = (self.pkt, self.pos, self.end);
        let regs = self.regs.clone();
        let ok = match self.parse_head(off, false) {
            Ok(h) => {
                (self.packets == 0 || h.sc_idx == self.sc)
                    && (self.stream_instance_id.is_none() || h.instance.is_none() || h.instance == self.stream_instance_id)
                    && h.uuid_diff <= 2
                    && sizes_valid(h.content_bits, h.packet_bits, h.header_bits)
            }
            Err(_) => false,
        };
        (self.pkt, self.pos, self.end) = saved;
        self.regs = regs;
        ok
    }

    /// The first packet of this stream starting at or after byte `from` and
    /// before byte `to` (other than at `not`), found by its magic number.
    fn scan(&mut self, from: u64, to: u64, not: u64) -> Option<u64> {
        let le = self.magic_le?;
        let m = PACKET_MAGIC as u32;
        let pat = if le { m.to_le_bytes() } else { m.to_be_bytes() };
        let finder = memchr::memmem::Finder::new(&pat);
        let to = (to.min(self.data.len() as u64) as usize).saturating_add(3).min(self.data.len());
        let mut at = from as usize;
        while at < to {
            let i = at + finder.find(&self.data[at..to])?;
            if i as u64 != not && self.probe(i as u64) {
                return Some(i as u64);
            }
            at = i + 1;
        }
        None
    }

    /// Hands the pages of packets already read back to the kernel, so that the
    /// resident memory of a reader stays bounded whatever the trace's size (the
    /// mapping is read-only and file-backed: nothing is lost, pages are read
    /// again from the page cache if ever touched).
    fn release_behind(&mut self, upto: u64) {
        // Per stream: a trace has one stream per CPU and channel, all read at once by
        // the merge, so at most streams x CHUNK of read pages stay resident (8 MiB
        // kept all 29 MB of the Autoware trace's 32 streams: `info` 50 -> 37 MiB).
        const CHUNK: u64 = 1 << 20;
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

    /// Decodes the packet header and context at byte `off`. Leaves `pos` after
    /// them. Checks only what makes them unreadable: the magic number, a
    /// stream class the metadata does not declare. `lenient`: a wrong magic
    /// number, or a stream id other than this stream's (once known, or the
    /// only class), are noted in the result instead, and the stream's class
    /// is used.
    fn parse_head(&mut self, off: u64, lenient: bool) -> DResult<Head> {
        let file_len = self.data.len() as u64;
        self.pkt = off * 8;
        self.pos = self.pkt;
        self.end = file_len * 8;
        self.work = 0;
        let md = self.md.clone();
        let mut tape = std::mem::take(&mut self.tape);
        let r = self.parse_head_into(&md, &mut tape, lenient);
        self.tape = tape;
        r
    }

    fn parse_head_into(&mut self, md: &Metadata, tape: &mut Vec<Val>, lenient: bool) -> DResult<Head> {
        let mut h = Head::default();
        let mut stream_id: Option<u64> = None;
        tape.clear();
        if let Some(ph) = &md.packet_header {
            self.dec(ph, tape).map_err(|DErr(m)| DErr::new(format!("packet header cannot be read ({})", m)))?;
            for (name, v) in top_level_uints(ph, tape) {
                match (name, v) {
                    ("magic", Some(m)) if m != PACKET_MAGIC => {
                        if !lenient {
                            return Err(DErr::new(format!("wrong packet magic number 0x{:08x} (expected 0x{:08x})", m, PACKET_MAGIC)));
                        }
                        h.bad_magic = Some(m);
                    }
                    ("stream_id", Some(s)) => stream_id = Some(s),
                    ("stream_instance_id", Some(s)) => h.instance = Some(s),
                    _ => {}
                }
            }
            if let (Some(uuid), Some(u)) = (md.uuid, top_level_bytes(ph, tape, "uuid")) {
                if u.len() == 16 {
                    h.uuid_diff = u.iter().zip(uuid.iter()).filter(|(a, b)| a != b).count();
                }
            }
        }
        h.stream_id = stream_id.unwrap_or_else(|| md.streams.first().map(|s| s.id).unwrap_or(0));
        let known = md.streams.iter().position(|s| s.id == h.stream_id);
        let ours = if self.packets > 0 {
            Some(self.sc)
        } else if md.streams.len() == 1 {
            Some(0)
        } else {
            None
        };
        h.sc_idx = match (known, ours) {
            (Some(k), Some(o)) if lenient && k != o => {
                h.bad_stream_id = Some(h.stream_id);
                o
            }
            (Some(k), _) => k,
            (None, Some(o)) if lenient => {
                h.bad_stream_id = Some(h.stream_id);
                o
            }
            (None, _) => return Err(DErr::new(format!("packet names stream class {}, which the metadata does not declare", h.stream_id))),
        };
        if let Some(pc) = &md.streams[h.sc_idx].packet_context {
            tape.clear();
            self.dec(pc, tape).map_err(|DErr(m)| DErr::new(format!("packet context cannot be read ({})", m)))?;
            for (name, v) in top_level_uints(pc, tape) {
                let Some(v) = v else { continue };
                match name {
                    "content_size" => h.content_bits = Some(v),
                    "packet_size" => h.packet_bits = Some(v),
                    "timestamp_begin" => h.ts_begin = Some(v),
                    "timestamp_end" => h.ts_end = Some(v),
                    "packet_seq_num" => h.seq = Some(v),
                    "events_discarded" => h.discarded = Some(v),
                    _ => {}
                }
                if !BOOKKEEPING.contains(&name) {
                    h.fields.push((name.to_string(), v));
                }
            }
        }
        h.header_bits = self.pos - self.pkt;
        Ok(h)
    }

    fn open_packet(&mut self) -> DResult<bool> {
        let file_len = self.data.len() as u64;
        if self.next_by_scan {
            // The previous packet's size was damaged: the next packet starts
            // somewhere after its content.
            let from = (self.end / 8).max(self.pkt / 8 + 1);
            self.next_by_scan = false;
            self.next_packet = self.scan(from, file_len, u64::MAX).unwrap_or(file_len);
        }
        let upto = self.next_packet;
        self.release_behind(upto);
        if self.next_packet >= file_len {
            return Ok(false);
        }
        let off = self.next_packet;
        self.content_guessed = false;
        let mut h = self.parse_head(off, true)?;
        if h.bad_magic.is_some() || h.bad_stream_id.is_some() {
            self.damaged_id_fields(off, &mut h)?;
        }
        if h.uuid_diff > 0 {
            self.damage.fields_repaired += 1;
            let msg = format!(
                "packet UUID differs from the trace's metadata UUID in {} of 16 bytes: damaged header field; the packet is read \
                 (its magic number, stream class and sizes are valid)",
                h.uuid_diff
            );
            self.warn(off, msg);
        }
        let (content_bits, packet_bits) = self.packet_sizes(off, &mut h)?;
        self.commit_packet(off, h, content_bits, packet_bits, file_len);
        Ok(true)
    }

    /// A packet whose magic number or stream id is wrong is read only if the
    /// rest of its header confirms it is a packet of this stream: its sizes
    /// agree with the packet index, or (without an index entry) are valid and
    /// lead to the next packet or to the end of the file.
    fn damaged_id_fields(&mut self, off: u64, h: &mut Head) -> DResult<()> {
        let file_len = self.data.len() as u64;
        let confirmed = match self.index_at(off) {
            Some(e) => h.content_bits == Some(e.content_bits) && h.packet_bits == Some(e.packet_bits),
            None => match h.packet_bits {
                Some(p) if sizes_valid(h.content_bits, h.packet_bits, h.header_bits) => {
                    let next = off.saturating_add(p / 8);
                    next == file_len || (next < file_len && self.probe(next))
                }
                _ => false,
            },
        };
        let sid = self.md.streams[h.sc_idx].id;
        if !confirmed {
            return Err(DErr::new(match (h.bad_magic, h.bad_stream_id) {
                (Some(m), _) => format!("wrong packet magic number 0x{:08x} (expected 0x{:08x})", m, PACKET_MAGIC),
                (None, Some(id)) if self.md.streams.iter().any(|s| s.id == id) => {
                    format!("packet names stream class {} but earlier packets of this file had {}", id, sid)
                }
                (None, id) => format!("packet names stream class {}, which the metadata does not declare", id.unwrap_or(0)),
            }));
        }
        let by = if self.index_at(off).is_some() { "its sizes agree with the packet index" } else { "its sizes lead to the next packet" };
        if let Some(m) = h.bad_magic {
            self.damage.fields_repaired += 1;
            self.warn(off, format!("packet magic number 0x{:08x} is damaged, but {}: the packet is read", m, by));
        }
        if let Some(id) = h.bad_stream_id {
            self.damage.fields_repaired += 1;
            self.warn(off, format!("packet's stream id {} is damaged ({}): the packet is read as stream class {}", id, by, sid));
            h.stream_id = sid;
        }
        Ok(())
    }

    /// The packet's content and packet sizes (bits), checked against the
    /// index (whose values win when they differ) and against the file.
    /// A packet size that cannot be right makes the next packet be searched
    /// for from the end of the content.
    fn packet_sizes(&mut self, off: u64, h: &mut Head) -> DResult<(u64, u64)> {
        let file_len = self.data.len() as u64;
        let remaining_bits = (file_len - off) * 8;
        if let Some(e) = self.index_at(off) {
            let mut diffs = Vec::new();
            for (name, hv, iv) in [
                ("content_size", &mut h.content_bits, e.content_bits),
                ("packet_size", &mut h.packet_bits, e.packet_bits),
                ("timestamp_begin", &mut h.ts_begin, e.ts_begin),
                ("timestamp_end", &mut h.ts_end, e.ts_end),
            ] {
                if let Some(v) = *hv {
                    if v != iv {
                        diffs.push(format!("{} {} (index: {})", name, v, iv));
                        *hv = Some(iv);
                    }
                }
            }
            if !diffs.is_empty() {
                self.damage.fields_repaired += diffs.len() as u64;
                let msg = format!(
                    "packet header disagrees with the packet index {}: {}; the index's values are used",
                    self.index_name,
                    diffs.join(", ")
                );
                self.warn(off, msg);
            }
        }
        let packet_bits = h.packet_bits.unwrap_or(h.content_bits.unwrap_or(remaining_bits));
        let content_bits = h.content_bits.unwrap_or(packet_bits);
        if content_bits < h.header_bits || content_bits == 0 {
            return Err(DErr::new(format!("packet content size {} bits is smaller than its header and context", content_bits)));
        }
        let packet_ok = packet_bits != 0 && content_bits <= packet_bits && packet_bits.is_multiple_of(8);
        if !packet_ok {
            if content_bits > packet_bits && packet_bits.is_multiple_of(8) && packet_bits >= h.header_bits {
                // A packet size that leads to the next packet (or to the end
                // of the file) is right, and the content size damaged.
                let next = off + packet_bits / 8;
                let confirmed = self.index_at(off).is_none() && (next == file_len || (next < file_len && self.probe(next)));
                if !confirmed {
                    return Err(DErr::new(format!(
                        "packet sizes are invalid (content {} bits, packet {} bits)",
                        content_bits, packet_bits
                    )));
                }
                self.damage.fields_repaired += 1;
                let msg = format!(
                    "packet content size {} bits is larger than its packet size {} bits, which leads to the next packet: the content \
                     size is damaged; events are read until one makes no sense",
                    content_bits, packet_bits
                );
                self.warn(off, msg);
                self.content_guessed = true;
                return Ok((packet_bits, packet_bits));
            }
            // The content size is plausible, the packet size is not.
            self.damage.fields_repaired += 1;
            self.warn(
                off,
                format!(
                    "packet size {} bits is invalid (content {} bits): the packet's content is read and the next packet is searched \
                     for after it",
                    packet_bits, content_bits
                ),
            );
            self.next_by_scan = true;
            return Ok((content_bits, content_bits.div_ceil(8) * 8));
        }
        if packet_bits > remaining_bits {
            // A truncated file, or a damaged packet size: if a packet of this
            // stream starts after this one's content, the size is wrong.
            let content_end = (off * 8).saturating_add(content_bits).min(file_len * 8).div_ceil(8);
            let saved = (self.pkt, self.pos, self.end);
            let next = if content_bits <= remaining_bits { self.scan(content_end, file_len, off) } else { None };
            (self.pkt, self.pos, self.end) = saved;
            if let Some(n) = next {
                self.damage.fields_repaired += 1;
                self.warn(
                    off,
                    format!(
                        "packet size {} bytes runs past the end of the file, but the next packet starts at byte {}: the packet size \
                         is damaged",
                        packet_bits / 8,
                        n
                    ),
                );
                return Ok((content_bits, (n - off) * 8));
            }
            self.warn(
                off,
                format!("stream file is truncated: the packet declares {} bytes, only {} are present", packet_bits / 8, file_len - off),
            );
        } else if self.index_at(off).is_none() {
            if let Some(n) = self.size_leads_nowhere(off, content_bits, packet_bits) {
                return Ok((content_bits, (n - off) * 8));
            }
        }
        Ok((content_bits, packet_bits))
    }

    /// Without an index, checks that the packet's size leads to the next
    /// packet (or to the end of the file). When no packet starts there but one
    /// starts after this packet's content and before that place, the size is
    /// damaged: returns where the next packet starts.
    fn size_leads_nowhere(&mut self, off: u64, content_bits: u64, packet_bits: u64) -> Option<u64> {
        let file_len = self.data.len() as u64;
        let next = off + packet_bits / 8;
        if next >= file_len || self.magic_le.is_none() {
            return None;
        }
        let saved = (self.pkt, self.pos, self.end);
        let mut found = None;
        if !self.probe(next) {
            let content_end = (off * 8 + content_bits).div_ceil(8);
            found = self.scan(content_end, next, next);
        }
        (self.pkt, self.pos, self.end) = saved;
        let n = found?;
        self.damage.fields_repaired += 1;
        let msg = format!(
            "packet size {} bytes leads to byte {}, where no packet of this stream starts, but one starts at byte {}: the packet size \
             is damaged",
            packet_bits / 8,
            next,
            n
        );
        self.warn(off, msg);
        Some(n)
    }

    /// Makes the packet at `off` the current one.
    fn commit_packet(&mut self, off: u64, h: Head, content_bits: u64, packet_bits: u64, file_len: u64) {
        let md = self.md.clone();
        if self.packets == 0 {
            self.sc = h.sc_idx;
            self.stream_class_id = h.stream_id;
            self.class_by_id = dense_ids(&md.streams[h.sc_idx]);
        }
        match (self.stream_instance_id, h.instance) {
            (Some(a), Some(b)) if a != b && self.packets > 0 => {
                self.damage.fields_repaired += 1;
                let msg = format!("packet's stream_instance_id {} differs from earlier packets' {}: damaged; {} is kept", b, a, a);
                self.warn(off, msg);
            }
            (_, Some(b)) => self.stream_instance_id = Some(b),
            _ => {}
        }
        self.end = self.pkt.saturating_add(content_bits).min(file_len * 8);
        self.next_packet = off.saturating_add(packet_bits / 8);
        self.resync_from = self.end.div_ceil(8);
        self.packets += 1;
        self.packet_fields = h.fields;
        self.packet_times(off, h.ts_begin, h.ts_end);
        let info = PacketInfo {
            offset: off,
            begin_ns: h.ts_begin.map(|t| self.to_ns(t)),
            end_ns: h.ts_end.map(|t| self.to_ns(t)),
            seq_num: h.seq,
            events_discarded: h.discarded,
        };
        self.packet_log.push(info);
    }

    /// Sets the clock and the time bounds of the packet's events from its
    /// timestamp_begin and timestamp_end, checked against the stream: a
    /// packet begins no earlier than the previous packet began, and ends no
    /// earlier than it begins. A begin time that breaks this is replaced by the
    /// previous event's time (the best bound known: the packet cannot begin
    /// before it); an end time that breaks it is not used.
    fn packet_times(&mut self, off: u64, begin: Option<u64>, end: Option<u64>) {
        self.time_warned = false;
        // The previous event's clock (or the previous packet's begin).
        let floor = if self.packets > 1 { Some(self.lo).max(self.prev_begin) } else { None };
        let mut base = begin.unwrap_or(self.clock);
        let mut hi = end.unwrap_or(u64::MAX);
        if let Some(b) = begin {
            let before_prev = self.prev_begin.is_some_and(|p| b < p);
            let after_end = end.is_some_and(|e| b > e);
            if after_end && !before_prev && self.begin_is_plausible(b) {
                hi = u64::MAX;
                self.damage.fields_repaired += 1;
                let msg = format!(
                    "packet timestamp_end {} ns is before its timestamp_begin {} ns: damaged, not used",
                    self.to_ns(end.unwrap_or(0)),
                    self.to_ns(b)
                );
                self.warn(off, msg);
            } else if before_prev || after_end {
                base = floor.unwrap_or_else(|| end.unwrap_or(b).min(b));
                self.damage.fields_repaired += 1;
                let why = if before_prev { "before the previous packet's" } else { "after the packet's end" };
                let from = if floor.is_some() { "the previous event's time" } else { "the packet's end" };
                let msg = format!(
                    "packet timestamp_begin {} ns is {}: damaged; this packet's clock starts at {} ns instead ({})",
                    self.to_ns(b),
                    why,
                    self.to_ns(base),
                    from
                );
                self.warn(off, msg);
            }
        }
        if hi < base {
            hi = u64::MAX;
        }
        self.prev_begin = Some(base);
        self.clock = base;
        self.lo = base;
        self.hi = hi;
    }

    /// When a packet's begin is after its end, whether the begin is the one to
    /// trust: it is no later than the next packet's begin (when the next
    /// packet can be read), and the end is the damaged one if it is before the
    /// previous packet's begin, or if nothing else is known.
    #[cold]
    fn begin_is_plausible(&mut self, begin: u64) -> bool {
        let saved = (self.pkt, self.pos, self.end);
        let regs = self.regs.clone();
        let next = if self.next_packet < self.data.len() as u64 { self.parse_head(self.next_packet, false).ok() } else { None };
        (self.pkt, self.pos, self.end) = saved;
        self.regs = regs;
        match next.and_then(|h| h.ts_begin) {
            Some(next_begin) => begin <= next_begin,
            None => true,
        }
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
        let fast = match &sc.header_fast {
            Some(h) => self.header_fast(h),
            None => false,
        };
        if !fast && !sc.event_header_prog.is_empty() {
            let mut ht = std::mem::take(&mut self.hdr_tape);
            ht.clear();
            let r = self.run(&sc.event_header_prog, &mut ht);
            self.hdr_tape = ht;
            r?;
        }
        let id = self.event_id;
        let class = match self.class_by_id.get(id as usize) {
            Some(&c) if c != u32::MAX => c as usize,
            _ => return Err(DErr::new(format!("unknown event id {} in stream class {}", id, sc.id))),
        };
        self.cur_class = class;
        self.cur_ts = self.to_ns(self.clock);
        if !self.whole.get(class).copied().unwrap_or(true) {
            self.limit = self.partial_values;
            self.skipped = 0;
        }
        let mut tape = std::mem::take(&mut self.tape);
        tape.clear();
        let ec = &md.events[class];
        let r = if let Some((ctx, payload)) = ec.body_starts {
            self.ctx_start = ctx;
            self.payload_start = payload;
            self.run(&ec.body_prog, &mut tape)
        } else {
            let mut r = self.run(&sc.event_context_prog, &mut tape);
            self.ctx_start = tape.len();
            if r.is_ok() {
                r = self.run(&ec.context_prog, &mut tape);
            }
            self.payload_start = tape.len();
            if r.is_ok() {
                r = self.run(&ec.payload_prog, &mut tape);
            }
            r
        };
        self.tape = tape;
        self.limit = usize::MAX;
        r
    }

    /// Reads an event header of LTTng's shape (`HeaderFast`) as its program would, without
    /// its tape; false, with nothing changed, when a value would run past the packet's content
    /// (the program then reads it again and says what is wrong).
    #[inline(always)]
    fn header_fast(&mut self, h: &HeaderFast) -> bool {
        let d: &[u8] = &self.data;
        let (pkt, end) = (self.pkt, self.end);
        let mut pos = align_at(align_at(self.pos, pkt, h.align), pkt, h.id_align);
        if pos + h.id_size as u64 > end {
            return false;
        }
        let id = bits_at(d, pos, h.id_size, true);
        pos += h.id_size as u64;
        let (event_id, ts, ts_size) = if id != h.extended {
            pos = align_at(pos, pkt, h.ts_align);
            if pos + h.ts_size as u64 > end {
                return false;
            }
            let ts = bits_at(d, pos, h.ts_size, true);
            pos += h.ts_size as u64;
            (id, ts, h.ts_size)
        } else {
            pos = align_at(pos, pkt, 8);
            if pos + 96 > end {
                return false;
            }
            let eid = bits_at(d, pos, 32, true);
            let ts = bits_at(d, pos + 32, 64, true);
            pos += 96;
            if h.ext_id_reg != u32::MAX {
                self.regs[h.ext_id_reg as usize] = eid;
            }
            (eid, ts, 64)
        };
        self.regs[h.id_reg as usize] = id;
        self.event_id = event_id;
        self.clock_value(ts, ts_size);
        self.pos = pos;
        true
    }

    /// The stream's clock after a `size`-bit clock value `raw` (the low bits of the clock:
    /// a smaller value than the clock's low bits means they wrapped).
    #[inline(always)]
    fn clock_value(&mut self, raw: u64, size: u32) {
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

    /// Runs a compiled program (see `types::Op`). The bit position stays in a
    /// local while fixed-shape values are read (stored back around the
    /// operations that need `self`), and errors are made out of line.
    #[inline]
    fn run(&mut self, prog: &[Op], out: &mut Vec<Val>) -> DResult<()> {
        // SAFETY: the mapping lives as long as `self` and is never replaced
        // while a program runs; a slice of it independent of the borrow of
        // `self` lets `int_done` take `&mut self` in the loop.
        let d: &[u8] = unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.data.len()) };
        let (pkt, end) = (self.pkt, self.end);
        let mut pos = self.pos;
        for op in prog {
            match op {
                &Op::Int { size, align, le, signed, role, reg } => {
                    pos = align_at(pos, pkt, align);
                    let e = pos + size as u64;
                    if e > end {
                        self.pos = pos;
                        return Err(past_end(size));
                    }
                    let raw = bits_at(d, pos, size, le);
                    pos = e;
                    self.int_done(raw, size, signed, role, reg, out);
                }
                &Op::Align(a) => pos = align_at(pos, pkt, a),
                &Op::F32 { align, le } => {
                    pos = align_at(pos, pkt, align);
                    if pos + 32 > end {
                        self.pos = pos;
                        return Err(past_end(32));
                    }
                    out.push(Val::F(f32::from_bits(bits_at(d, pos, 32, le) as u32) as f64));
                    pos += 32;
                }
                &Op::F64 { align, le } => {
                    pos = align_at(pos, pkt, align);
                    if pos + 64 > end {
                        self.pos = pos;
                        return Err(past_end(64));
                    }
                    out.push(Val::F(f64::from_bits(bits_at(d, pos, 64, le))));
                    pos += 64;
                }
                Op::Str => {
                    self.pos = pos;
                    self.string(out)?;
                    pos = self.pos;
                }
                &Op::Text(len) => {
                    self.pos = pos;
                    self.text_array(len, out)?;
                    pos = self.pos;
                }
                Op::Variant(v) => {
                    self.pos = pos;
                    self.variant(v, out)?;
                    pos = self.pos;
                }
                Op::Seq(q) => {
                    self.pos = pos;
                    self.seq(q, out)?;
                    pos = self.pos;
                }
                Op::Fixed(f) => {
                    let base = (pos >> 3) as usize;
                    let bits = f.bytes as u64 * 8;
                    // Each integer is read as the 8 bytes at its place, so 8
                    // bytes past the values must be in the file.
                    if pos & 7 == 0 && pos + bits <= end && base + f.bytes as usize + 8 <= d.len() {
                        let n = f.items.len();
                        let len = out.len();
                        if self.limit.saturating_sub(len) >= n {
                            // Written in place: one capacity check for the whole run.
                            out.reserve(n);
                            let spare = &mut out.spare_capacity_mut()[..n];
                            for (slot, it) in spare.iter_mut().zip(&f.items) {
                                slot.write(fixed_value(d, base, it, &mut self.regs));
                            }
                            // SAFETY: the `n` slots after `len` were just written.
                            unsafe { out.set_len(len + n) };
                        } else {
                            // Past the values wanted: registers only (sequence lengths).
                            let room = self.limit.saturating_sub(len);
                            self.skipped += n - room.min(n);
                            for (j, it) in f.items.iter().enumerate() {
                                if j < room {
                                    out.push(fixed_value(d, base, it, &mut self.regs));
                                } else if it.reg != u32::MAX {
                                    fixed_value(d, base, it, &mut self.regs);
                                }
                            }
                        }
                        pos += bits;
                    } else {
                        self.pos = pos;
                        self.run(&f.ops, out)?;
                        pos = self.pos;
                    }
                }
                Op::Other(t) => {
                    self.pos = pos;
                    self.dec(t, out)?;
                    pos = self.pos;
                }
            }
        }
        self.pos = pos;
        Ok(())
    }

    /// A compiled variant: as `dec` reads a `Ty::Variant`.
    fn variant(&mut self, v: &VariantOp, out: &mut Vec<Val>) -> DResult<()> {
        let raw = self.regs[v.reg as usize];
        let tag: i128 = if v.tag_signed { raw as i64 as i128 } else { raw as i128 };
        let Some(&(_, _, idx)) = v.ranges.iter().find(|(lo, hi, _)| *lo <= tag && tag <= *hi) else {
            return Err(DErr::new(format!("variant tag '{}' value {} selects no option", v.tag, tag)));
        };
        out.push(Val::Opt(idx));
        self.run(&v.options[idx as usize], out)
    }

    /// A compiled sequence: as `dec` reads a `Ty::Seq` that is not text.
    fn seq(&mut self, q: &SeqOp, out: &mut Vec<Val>) -> DResult<()> {
        let n = self.regs[q.reg as usize];
        self.check_count(n, &q.elem, out.len())?;
        out.push(Val::Len(n as u32));
        self.align(q.elem_align);
        for _ in 0..n {
            self.run(&q.prog, out)?;
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
        let end = self.pos + size as u64;
        if end > self.end {
            return Err(past_end(size));
        }
        let v = bits_at(&self.data, self.pos, size, le);
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
                    return Err(DErr::new(format!("variant tag '{}' value {} selects no option", v.tag, tag)));
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
            return Err(DErr::new(format!("a {}-byte text field runs past the end of the packet content", len)));
        }
        out.push(Val::Str(self.pos >> 3, len as u32));
        self.pos += bits;
        Ok(())
    }

    fn check_count(&mut self, n: u64, elem: &Ty, tape_len: usize) -> DResult<()> {
        // Values read past `limit` count as if on the tape: the bound is the same either way.
        let tape_len = tape_len + if self.limit == usize::MAX { 0 } else { self.skipped };
        let min_bits = min_size_bits(elem);
        let left = self.end.saturating_sub(self.pos);
        if min_bits > 0 && n.saturating_mul(min_bits) > left {
            return Err(DErr::new(format!("array of {} elements runs past the end of the packet content", n)));
        }
        if tape_len as u64 + n > MAX_TAPE as u64 {
            return Err(DErr::new(format!("array of {} elements is too large", n)));
        }
        self.work = self.work.saturating_add(n);
        if self.work > MAX_TAPE as u64 {
            return Err(DErr::new(format!("arrays of more than {} elements in all", MAX_TAPE)));
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
            Role::Clock => self.clock_value(raw, size),
        }
        if let Some(r) = reg {
            self.regs[r as usize] = val;
        }
        if out.len() < self.limit {
            out.push(if signed { Val::I(val as i64) } else { Val::U(val) });
        } else {
            self.skipped += 1;
        }
    }
}

/// One value of an `Op::Fixed` whose bytes start at `base` (its register set).
#[inline(always)]
fn fixed_value(d: &[u8], base: usize, it: &crate::types::FixedItem, regs: &mut [u64]) -> Val {
    let b = base + it.off as usize;
    if let Some(len) = it.text {
        return Val::Str(b as u64, len);
    }
    let w = u64::from_le_bytes(d[b..b + 8].try_into().unwrap()) << it.shift;
    let val = if it.signed { ((w as i64) >> it.shift) as u64 } else { w >> it.shift };
    if it.reg != u32::MAX {
        regs[it.reg as usize] = val;
    }
    if it.signed {
        Val::I(val as i64)
    } else {
        Val::U(val)
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

/// `pos` (bits from the file's start) aligned to `a` bits from the packet's start.
#[inline(always)]
fn align_at(pos: u64, pkt: u64, a: u32) -> u64 {
    let a = a as u64;
    if a > 1 {
        pkt + ((pos - pkt + a - 1) & !(a - 1))
    } else {
        pos
    }
}

/// The `size`-bit integer at bit `pos` of `d` (the caller has checked that it
/// lies within the packet's content, so within `d`).
#[inline(always)]
fn bits_at(d: &[u8], pos: u64, size: u32, le: bool) -> u64 {
    let byte = (pos >> 3) as usize;
    let shift = (pos & 7) as u32;
    // Little-endian bit fields within one 8-byte word (LTTng's compact event header: a
    // 5-bit id and a 27-bit timestamp at bit 5), when 8 bytes from the field's first byte
    // are in the file: one load, a shift and a mask.
    if le && shift + size <= 64 {
        if let Some(w) = d.get(byte..byte + 8) {
            let w = u64::from_le_bytes(w.try_into().unwrap());
            return if size >= 64 { w } else { (w >> shift) & ((1u64 << size) - 1) };
        }
    }
    if shift == 0 {
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
    }
}

#[cold]
#[inline(never)]
fn past_end(size: u32) -> DErr {
    DErr::new(format!("a {}-bit field runs past the end of the packet content", size))
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
fn top_level_uints<'t>(ty: &'t Ty, tape: &[Val]) -> Vec<(&'t str, Option<u64>)> {
    let mut out = Vec::new();
    if let Ty::Struct(s) = ty {
        let mut i = 0;
        for f in &s.fields {
            let v = match (&f.ty, tape.get(i)) {
                (Ty::Int(_), Some(Val::U(v))) | (Ty::Enum(_), Some(Val::U(v))) => Some(*v),
                (Ty::Int(_), Some(Val::I(v))) | (Ty::Enum(_), Some(Val::I(v))) => Some(*v as u64),
                _ => None,
            };
            out.push((f.name.as_str(), v));
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

/// Whether decoded packet sizes (bits) could describe a real packet.
fn sizes_valid(content: Option<u64>, packet: Option<u64>, header_bits: u64) -> bool {
    let content_ok = content.is_none_or(|c| c >= header_bits && c > 0);
    let packet_ok = packet.is_none_or(|p| p > 0 && p.is_multiple_of(8) && content.is_none_or(|c| c <= p));
    content_ok && packet_ok
}

/// Byte order of the packet header's top-level `magic` field, if it has one.
fn magic_byte_order(ph: &Ty) -> Option<bool> {
    let Ty::Struct(s) = ph else { return None };
    s.fields.iter().find(|f| f.name == "magic").and_then(|f| match &f.ty {
        Ty::Int(i) if i.size == 32 => Some(i.le),
        _ => None,
    })
}

/// Entries of an LTTng packet index file, checked against the stream file
/// (`file_len` bytes): in order, not overlapping, with possible sizes.
/// Entries past the end of the file (a truncated stream) are dropped and
/// counted (the second value).
pub fn parse_index(bytes: &[u8], file_len: u64) -> std::result::Result<(Vec<IndexEntry>, usize), String> {
    let be32 = |o: usize| u32::from_be_bytes(bytes[o..o + 4].try_into().unwrap());
    if bytes.len() < 16 {
        return Err("shorter than its header".into());
    }
    if be32(0) != INDEX_MAGIC {
        return Err(format!("wrong magic number 0x{:08x} (expected 0x{:08x})", be32(0), INDEX_MAGIC));
    }
    let (major, entry_len) = (be32(4), be32(12) as usize);
    if major != 1 || entry_len < 48 {
        return Err(format!("unknown index format {} with entries of {} bytes", major, entry_len));
    }
    let mut out: Vec<IndexEntry> = Vec::new();
    let entries = bytes[16..].chunks_exact(entry_len);
    let total = entries.len();
    for (k, e) in entries.enumerate() {
        let f = |i: usize| u64::from_be_bytes(e[i * 8..i * 8 + 8].try_into().unwrap());
        let ent = IndexEntry { offset: f(0), packet_bits: f(1), content_bits: f(2), ts_begin: f(3), ts_end: f(4), events_discarded: f(5) };
        if ent.offset >= file_len {
            return Ok((out, total - k));
        }
        let bad = ent.packet_bits == 0
            || !ent.packet_bits.is_multiple_of(8)
            || ent.content_bits > ent.packet_bits
            || out.last().is_some_and(|p| p.offset.saturating_add(p.packet_bits / 8) > ent.offset)
            || ent.ts_begin > ent.ts_end;
        if bad {
            return Err(format!("entry {} (packet at byte {}) is impossible or out of order", k, ent.offset));
        }
        out.push(ent);
    }
    Ok((out, 0))
}
