//! Finding traces under the paths a user gives, and merging all their streams
//! into one time-ordered sequence of events.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{CtfError, Result, Warning};
use crate::metadata::{self, Metadata};
use crate::meter::Meter;
use crate::stream::{StreamIdentity, StreamReader};

pub struct Trace {
    pub dir: PathBuf,
    /// Directory relative to the path the user gave ("." for the path itself).
    pub rel: String,
    pub md: Arc<Metadata>,
    /// Offset of the trace clock's origin to the Unix epoch, in ns.
    pub offset_ns: i64,
}

/// Lost events and packets of one stream (possibly split over several files).
#[derive(Debug, Clone, Default)]
pub struct StreamLoss {
    pub trace: usize,
    pub files: Vec<String>,
    pub stream_class: u64,
    pub stream_instance: Option<u64>,
    pub events_discarded: u64,
    pub packets_lost: u64,
    /// (begin ns, end ns, events) of each discard report.
    pub intervals: Vec<(u64, u64, u64)>,
}

pub struct TraceSet {
    pub traces: Vec<Trace>,
    pub streams: Vec<StreamReader>,
    pub warnings: Vec<Warning>,
    /// Where a reader of the whole set (the model builder) says how far it got:
    /// bytes read of the total, and events (`Meter`); None: nobody asks.
    pub meter: Option<Arc<Meter>>,
    /// The streams' next events in time order (`Tournament`); None until the first `next`.
    merge: Option<Tournament>,
    pending: Option<u32>,
}

/// A tournament tree of losers over the streams' next events: each stream's key is
/// (time, stream) packed in one integer (`packed`; `u128::MAX`: no event left), each
/// inner node holds the stream that lost the match there, the top the overall
/// winner. After the winner advances, one replay up its path of log2(streams)
/// matches, each one comparison and a branch-free select, gives the next winner
/// (a binary heap's pop and push took twice the comparisons and mispredicted).
/// Keys are distinct (the stream index is in them): the order is fully defined.
struct Tournament {
    /// Leaves: a power of two (at least 1); those beyond the streams never win.
    leaves: usize,
    keys: Vec<u128>,
    /// nodes[0]: the winner; nodes[1..leaves]: the loser of each match.
    nodes: Vec<u32>,
    /// The winner's key.
    top: u128,
}

impl Tournament {
    fn new(keys: Vec<u128>) -> Tournament {
        let leaves = keys.len().next_power_of_two().max(1);
        let mut t = Tournament { leaves, keys, nodes: vec![0; leaves], top: u128::MAX };
        t.keys.resize(leaves, u128::MAX);
        // winners[n]: the winner below node n (leaves at leaves..2*leaves).
        let mut winners = vec![0u32; 2 * leaves];
        for (i, w) in winners[leaves..].iter_mut().enumerate() {
            *w = i as u32;
        }
        for n in (1..leaves).rev() {
            let (a, b) = (winners[2 * n], winners[2 * n + 1]);
            let (win, lose) = if t.keys[b as usize] < t.keys[a as usize] { (b, a) } else { (a, b) };
            winners[n] = win;
            t.nodes[n] = lose;
        }
        t.nodes[0] = winners[1];
        t.top = t.keys[t.nodes[0] as usize];
        t
    }

    /// The winning stream, or None once every key is `u128::MAX`.
    #[inline]
    fn winner(&self) -> Option<usize> {
        (self.top != u128::MAX).then(|| self.nodes[0] as usize)
    }

    /// Sets the key of `leaf` (the last winner) and plays its path again.
    #[inline]
    fn replay(&mut self, leaf: usize, key: u128) {
        self.keys[leaf] = key;
        let (mut w, mut wk) = (leaf as u32, key);
        let mut n = (leaf + self.leaves) >> 1;
        while n > 0 {
            let l = self.nodes[n];
            let lk = self.keys[l as usize];
            let swap = lk < wk;
            self.nodes[n] = if swap { w } else { l };
            w = if swap { l } else { w };
            wk = if swap { lk } else { wk };
            n >>= 1;
        }
        self.nodes[0] = w;
        self.top = wk;
    }
}

/// Orders names so that `ros2_10` comes after `ros2_9`.
fn natural_key(s: &str) -> (String, u64) {
    let digits = s.chars().rev().take_while(|c| c.is_ascii_digit()).count();
    let (head, tail) = s.split_at(s.len() - digits);
    (head.to_string(), tail.parse().unwrap_or(0))
}

/// Trace directories at or below `root`; directories that hold CTF stream
/// files but no metadata go to `orphans`.
fn find_trace_dirs(root: &Path, out: &mut Vec<PathBuf>, orphans: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if root.join("metadata").is_file() {
        out.push(root.to_path_buf());
    } else if holds_stream_files(root) {
        orphans.push(root.to_path_buf());
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(root)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.path())
        .collect();
    subdirs.sort_by_key(|p| natural_key(&p.file_name().unwrap_or_default().to_string_lossy()));
    for d in subdirs {
        find_trace_dirs(&d, out, orphans)?;
    }
    Ok(())
}

/// Whether one of the first regular files of `dir` starts with a CTF packet
/// magic number (in either byte order).
fn holds_stream_files(dir: &Path) -> bool {
    use std::io::Read;
    let Ok(rd) = std::fs::read_dir(dir) else { return false };
    let magic = (crate::stream::PACKET_MAGIC as u32).to_le_bytes();
    rd.filter_map(|e| e.ok()).filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false)).take(16).any(|e| {
        let mut head = [0u8; 4];
        std::fs::File::open(e.path()).and_then(|mut f| f.read_exact(&mut head)).is_ok()
            && (head == magic || head == [magic[3], magic[2], magic[1], magic[0]])
    })
}

/// Stream files of a trace directory, in natural name order.
pub fn stream_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy().to_string();
            n != "metadata" && !n.starts_with('.') && !n.ends_with(".idx")
        })
        .collect();
    files.sort_by_key(|p| natural_key(&p.file_name().unwrap_or_default().to_string_lossy()));
    Ok(files)
}

/// The directory a user's path stands for, and the trace directories in it.
/// Also warns about directories holding stream files without metadata.
fn trace_dirs(p: &Path, warnings: &mut Vec<Warning>) -> Result<(PathBuf, Vec<PathBuf>)> {
    let root = if p.is_file() && p.file_name().map(|n| n == "metadata").unwrap_or(false) {
        p.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        p.to_path_buf()
    };
    if !root.exists() {
        return Err(CtfError::NotFound(format!("{}: no such file or directory", p.display())));
    }
    if !root.is_dir() {
        return Err(CtfError::NotFound(format!(
            "{}: not a trace directory (a CTF trace is a directory holding a 'metadata' file)",
            p.display()
        )));
    }
    let (mut dirs, mut orphans) = (Vec::new(), Vec::new());
    find_trace_dirs(&root, &mut dirs, &mut orphans).map_err(|e| CtfError::Io { path: root.display().to_string(), msg: e.to_string() })?;
    if dirs.is_empty() {
        let why = match orphans.first() {
            Some(o) => format!("{} holds CTF stream files, but its 'metadata' file is missing", o.display()),
            None => "no 'metadata' file in it or below it".to_string(),
        };
        return Err(CtfError::NotFound(format!("{}: no CTF trace found: {}", p.display(), why)));
    }
    for o in orphans {
        let msg = "holds CTF stream files, but no 'metadata' file: its streams are not read".to_string();
        warnings.push(Warning { file: o.display().to_string(), offset: None, msg });
    }
    Ok((root, dirs))
}

/// The trace directories of input `p` not already found under an earlier
/// input (same canonical path); says once which were.
fn new_dirs(p: &Path, dirs: Vec<PathBuf>, seen: &mut HashMap<PathBuf, String>, warnings: &mut Vec<Warning>) -> Vec<PathBuf> {
    let mut fresh = Vec::new();
    let mut again: Vec<(PathBuf, String)> = Vec::new();
    for dir in dirs {
        let canon = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        match seen.get(&canon) {
            Some(first) => again.push((dir, first.clone())),
            None => {
                seen.insert(canon, p.display().to_string());
                fresh.push(dir);
            }
        }
    }
    if again.is_empty() {
        return fresh;
    }
    let mut firsts: Vec<&str> = again.iter().map(|(_, f)| f.as_str()).collect();
    firsts.dedup();
    let msg = if fresh.is_empty() {
        format!(
            "input given more than once: its {} found under {} already; read once",
            if again.len() == 1 { "trace was".to_string() } else { format!("{} traces were", again.len()) },
            firsts.join(", ")
        )
    } else {
        let names: Vec<String> = again.iter().map(|(d, _)| d.display().to_string()).collect();
        format!("{} found under {} already: read once", names.join(", "), firsts.join(", "))
    };
    warnings.push(Warning { file: p.display().to_string(), offset: None, msg });
    fresh
}

/// Leaves out stream files that hold a stream already present (a copy: same
/// trace, stream class, instance, first packet and leading bytes); the
/// larger file of the two is kept. One warning per copied file, or per trace
/// directory when several of its files are copies of another directory's.
fn dedup_streams(traces: &[Trace], mut streams: Vec<StreamReader>, warnings: &mut Vec<Warning>) -> Vec<StreamReader> {
    let ids: Vec<Option<StreamIdentity>> = streams.iter_mut().map(|s| s.identity()).collect();
    let mut by_id: HashMap<&StreamIdentity, Vec<usize>> = HashMap::new();
    let mut dropped: Vec<(usize, usize)> = Vec::new(); // (dropped, kept)
    for (i, id) in ids.iter().enumerate() {
        let Some(id) = id else { continue };
        let same = by_id.entry(id).or_default();
        match same.iter().position(|&k| streams[k].same_start(&streams[i])) {
            Some(j) => {
                let k = same[j];
                if streams[i].file_len() > streams[k].file_len() {
                    dropped.push((k, i));
                    same[j] = i;
                } else {
                    dropped.push((i, k));
                }
            }
            None => same.push(i),
        }
    }
    if dropped.is_empty() {
        return streams;
    }
    // Group by (trace of the dropped file, trace of the kept one).
    let mut groups: BTreeMap<(usize, usize), Vec<(usize, usize)>> = BTreeMap::new();
    for &(d, k) in &dropped {
        groups.entry((streams[d].trace, streams[k].trace)).or_default().push((d, k));
    }
    for ((td, tk), pairs) in groups {
        let (d, k) = pairs[0];
        let (sd, sk) = (&streams[d], &streams[k]);
        let w = if pairs.len() == 1 || td == tk {
            pairs
                .iter()
                .map(|&(d, k)| {
                    let id = ids[k].as_ref().expect("a kept duplicate has an identity");
                    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_else(|| "none".into());
                    Warning {
                        file: streams[d].path.clone(),
                        offset: None,
                        msg: format!(
                            "holds the same stream as {} (stream class {}, instance {}, first packet number {}, same bytes): the stream \
                             is read once, from that file",
                            streams[k].path,
                            id.stream_class,
                            opt(id.instance),
                            opt(id.first_seq)
                        ),
                    }
                })
                .collect::<Vec<_>>()
        } else {
            vec![Warning {
                file: traces[td].dir.display().to_string(),
                offset: None,
                msg: format!(
                    "{} stream files (e.g. {}) hold the same streams as those of {} (e.g. {}): each stream is read once",
                    pairs.len(),
                    sd.path,
                    traces[tk].dir.display(),
                    sk.path
                ),
            }]
        };
        warnings.extend(w);
    }
    let drop: HashSet<usize> = dropped.iter().map(|&(d, _)| d).collect();
    streams.into_iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, s)| s).collect()
}

impl TraceSet {
    /// Opens every trace found under `paths`. A trace whose metadata cannot be
    /// read is skipped with a warning, unless no trace at all can be read.
    /// A trace found twice (the same path given twice, or a path inside
    /// another) and a stream present twice (a copied stream file) are read
    /// once, with a warning.
    /// A set of no traces (the start of an incremental model build).
    pub fn empty() -> TraceSet {
        TraceSet { traces: vec![], streams: vec![], warnings: vec![], meter: None, merge: None, pending: None }
    }

    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<TraceSet> {
        let mut traces = Vec::new();
        let mut warnings = Vec::new();
        let mut first_err: Option<CtfError> = None;
        // Every trace directory found so far (canonical path) and the input it was found under.
        let mut seen: HashMap<PathBuf, String> = HashMap::new();
        for p in paths {
            let p = p.as_ref();
            let (root, dirs) = trace_dirs(p, &mut warnings)?;
            for dir in new_dirs(p, dirs, &mut seen, &mut warnings) {
                let mfile = dir.join("metadata");
                let res = metadata::read_text(&mfile, &mut warnings).and_then(|text| metadata::parse(&text, &mfile.display().to_string()));
                match res {
                    Ok(md) => {
                        let rel = dir.strip_prefix(&root).map(|r| r.display().to_string()).unwrap_or_default();
                        let rel = if rel.is_empty() { ".".to_string() } else { rel };
                        let offset_ns = md.main_clock().map(|c| c.offset_ns()).unwrap_or(0);
                        traces.push(Trace { dir, rel, md: Arc::new(md), offset_ns });
                    }
                    Err(e) => {
                        warnings.push(Warning { file: mfile.display().to_string(), offset: None, msg: format!("trace skipped: {}", e) });
                        if first_err.is_none() {
                            first_err = Some(e);
                        }
                    }
                }
            }
        }
        if traces.is_empty() {
            return Err(first_err.unwrap_or_else(|| CtfError::NotFound("no trace given".into())));
        }
        let mut streams = Vec::new();
        for (ti, t) in traces.iter().enumerate() {
            let files = stream_files(&t.dir).map_err(|e| CtfError::Io { path: t.dir.display().to_string(), msg: e.to_string() })?;
            for f in files {
                match std::fs::metadata(&f) {
                    Ok(m) if m.len() == 0 => continue,
                    _ => {}
                }
                match StreamReader::open(&f, ti, t.md.clone()) {
                    Ok(s) => streams.push(s),
                    Err(msg) => {
                        warnings.push(Warning { file: f.display().to_string(), offset: None, msg: format!("stream skipped: {}", msg) })
                    }
                }
            }
        }
        let streams = dedup_streams(&traces, streams, &mut warnings);
        Ok(TraceSet { traces, streams, warnings, meter: None, merge: None, pending: None })
    }

    /// Stream `i` advanced to its next event: that event's key (`packed`), u128::MAX at its end.
    #[inline]
    fn advanced_key(&mut self, i: usize) -> u128 {
        if self.streams[i].advance() {
            packed(self.key(i), i as u32)
        } else {
            u128::MAX
        }
    }

    #[inline]
    fn key(&self, i: usize) -> i64 {
        let s = &self.streams[i];
        self.traces[s.trace].offset_ns.wrapping_add(s.cur_ts as i64)
    }

    /// Advances to the next event in time order and returns the index of the
    /// stream holding it (`streams[i]` then describes the event), or None at
    /// the end.
    // A cursor, not an Iterator: the index is only meaningful until the next
    // call (the stream's current event is overwritten), so iterator adapters
    // such as collect() would read stale state.
    #[expect(clippy::should_implement_trait, reason = "a lending cursor over streams, not an Iterator")]
    pub fn next(&mut self) -> Option<usize> {
        if self.merge.is_none() {
            let keys = (0..self.streams.len()).map(|i| self.advanced_key(i)).collect();
            self.merge = Some(Tournament::new(keys));
        } else if let Some(p) = self.pending.take() {
            let k = self.advanced_key(p as usize);
            self.merge.as_mut()?.replay(p as usize, k);
        }
        let w = self.merge.as_ref()?.winner()?;
        self.pending = Some(w as u32);
        Some(w)
    }

    /// Lost events and packets per stream. A stream may be split over several
    /// files (LTTng's tracefile rotation): files of one trace with the same
    /// stream class and stream instance id are one stream, whose counters run
    /// on across them. Reports what was read so far.
    ///
    /// The chunks of a rotated LTTng session (`lttng rotate`, `roscope watch`)
    /// are one trace each, with the same trace UUID and layout: a stream's
    /// counters run on across them too, so its files in every trace of that
    /// UUID and relative layout are one stream (counted under the first trace).
    pub fn losses(&self) -> Vec<StreamLoss> {
        let chunk_of = |t: usize| {
            let (u, layout) = (self.traces[t].md.uuid, self.traces[t].rel.rsplit_once("/ust/").map(|x| x.1));
            self.traces
                .iter()
                .position(|o| u.is_some() && layout.is_some() && o.md.uuid == u && o.rel.rsplit_once("/ust/").map(|x| x.1) == layout)
                .unwrap_or(t)
        };
        let mut groups: Vec<(usize, u64, Option<u64>, Vec<usize>)> = Vec::new();
        for (i, s) in self.streams.iter().enumerate() {
            let key = (chunk_of(s.trace), s.stream_class_id, s.stream_instance_id);
            match groups.iter_mut().find(|g| key.2.is_some() && (g.0, g.1, g.2) == key) {
                Some(g) => g.3.push(i),
                None => groups.push((key.0, key.1, key.2, vec![i])),
            }
        }
        let mut out = Vec::new();
        for (trace, class, instance, files) in groups {
            let mut l = StreamLoss { trace, stream_class: class, stream_instance: instance, ..Default::default() };
            let mut prev_disc = 0u64;
            let mut prev_seq: Option<u64> = None;
            let mut prev_end: Option<u64> = None;
            for &fi in &files {
                let s = &self.streams[fi];
                l.files.push(s.path.clone());
                for pk in &s.packet_log {
                    if let Some(d) = pk.events_discarded {
                        if d > prev_disc {
                            let n = d - prev_disc;
                            let begin = prev_end.or(pk.begin_ns).unwrap_or(0);
                            l.intervals.push((begin, pk.end_ns.unwrap_or(begin), n));
                            l.events_discarded += n;
                            prev_disc = d;
                        }
                    }
                    if let Some(sq) = pk.seq_num {
                        match prev_seq {
                            Some(p) if sq > p.saturating_add(1) => l.packets_lost = l.packets_lost.saturating_add(sq - p - 1),
                            // The first packet kept is not number 0: earlier
                            // ones were overwritten (flight-recorder mode) or lost.
                            None if sq > 0 => l.packets_lost = l.packets_lost.saturating_add(sq),
                            _ => {}
                        }
                        prev_seq = Some(sq);
                    }
                    if pk.end_ns.is_some() {
                        prev_end = pk.end_ns;
                    }
                }
            }
            out.push(l);
        }
        out
    }

    /// (bytes read so far, total bytes) over every stream file: for progress.
    pub fn progress(&self) -> (u64, u64) {
        self.streams.iter().fold((0, 0), |(a, b), s| (a + s.consumed(), b + s.file_len()))
    }

    /// Warnings from opening and from every stream so far.
    pub fn all_warnings(&self) -> Vec<Warning> {
        let mut w = self.warnings.clone();
        for s in &self.streams {
            w.extend(s.warnings.iter().cloned());
        }
        w
    }
}

/// A time and a stream index as one integer ordered as the pair (the time's sign bit flipped
/// so that negative times sort first).
#[inline(always)]
fn packed(ns: i64, stream: u32) -> u128 {
    (((ns as u64) ^ (1 << 63)) as u128) << 32 | stream as u128
}

#[cfg(test)]
mod tests {
    use super::{packed, Tournament};

    /// Streams of ascending times (some empty, some with times equal across streams and
    /// negative ones), merged by the tournament exactly as a sort of all (time, stream) pairs.
    #[test]
    fn tournament_merges_as_a_sort() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for n in [0usize, 1, 2, 3, 5, 8, 31, 32, 33] {
            let streams: Vec<Vec<i64>> = (0..n)
                .map(|_| {
                    let mut t = -50 + rnd(100) as i64;
                    (0..rnd(40))
                        .map(|_| {
                            t += rnd(4) as i64;
                            t
                        })
                        .collect()
                })
                .collect();
            let mut want: Vec<(i64, usize)> = streams.iter().enumerate().flat_map(|(s, v)| v.iter().map(move |&t| (t, s))).collect();
            want.sort();
            let mut at = vec![0usize; n];
            let key = |s: usize, at: &[usize]| streams[s].get(at[s]).map_or(u128::MAX, |&t| packed(t, s as u32));
            let mut t = Tournament::new((0..n).map(|s| key(s, &at)).collect());
            let mut got = Vec::new();
            while let Some(w) = t.winner() {
                got.push((streams[w][at[w]], w));
                at[w] += 1;
                t.replay(w, key(w, &at));
            }
            assert_eq!(got, want, "{n} streams");
        }
    }
}
