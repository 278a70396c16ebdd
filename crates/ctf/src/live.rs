//! A client of LTTng's live viewer protocol (the `lttng-relayd` viewer
//! port, protocol 2.4): `roscope watch --source live` reads a live session's
//! packets through it as soon as the session's live timer flushed them.
//!
//! The protocol (lttng-tools' `lttng-viewer-abi`): every request is a 16-byte
//! header (payload size u64, command u32, command version u32) then the
//! command's payload; every integer is big-endian. A viewer CONNECTs (as a
//! command client), CREATEs its viewer session, LISTs the relay's sessions,
//! ATTACHes to one (from its beginning), then, per data stream, asks for the
//! NEXT INDEX (a packet's offset, size in bits and time range; or RETRY,
//! INACTIVE with a time up to which the stream has nothing, HUP at its end)
//! and GETs the PACKET's bytes; METADATA and NEW STREAMS are asked for when
//! an index's flags say so (and new streams at every poll).
//!
//! `poll` writes the packets it got into a directory laid out as the relay's
//! output (each stream's packets appended to its own file, each trace's
//! metadata beside them): a complete CTF trace, read by the same reader as
//! any chunk. Its events are to be read only up to the time every live
//! stream is known to be complete to (the smallest of their last packet's
//! end or inactivity beacon, `Polled::upto`): the streams' packets do not end
//! at one time (a live timer flushes them one after the other, a full
//! sub-buffer at any time), so a packet that straddles that time is handed
//! over again by the next poll, whose reader skips the events it read already
//! (`Polled::after`). Each event is read once, and successive directories
//! follow each other in time as rotation chunks do. Times are the packets'
//! clock cycles, which are nanoseconds for LTTng's user-space clock.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{CtfError, Result};

const CONNECT: u32 = 1;
const LIST_SESSIONS: u32 = 2;
const ATTACH_SESSION: u32 = 3;
const GET_NEXT_INDEX: u32 = 4;
const GET_PACKET: u32 = 5;
const GET_METADATA: u32 = 6;
const GET_NEW_STREAMS: u32 = 7;
const CREATE_SESSION: u32 = 8;

const FLAG_NEW_METADATA: u32 = 1;
const FLAG_NEW_STREAM: u32 = 2;

const INDEX_OK: u32 = 1;
const INDEX_RETRY: u32 = 2;
const INDEX_HUP: u32 = 3;
const INDEX_INACTIVE: u32 = 5;
const INDEX_EOF: u32 = 6;

const HOST_NAME_MAX: usize = 64;
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 4096;
/// A stream's description: id, trace id, metadata flag, path, channel name.
const STREAM_LEN: usize = 8 + 8 + 4 + PATH_MAX + NAME_MAX;
/// A session's description (protocol 2.4): id, live timer, clients, streams, host, name.
const SESSION_LEN: usize = 8 + 4 + 4 + 4 + HOST_NAME_MAX + NAME_MAX;

/// How long one answer of the relay may take before the client gives up.
const IO_TIMEOUT: Duration = Duration::from_secs(20);
/// At most this many packets per stream and poll (a stream far behind cannot
/// hold up the others' for long).
const MAX_PACKETS_PER_POLL: usize = 256;
/// The largest packet accepted (LTTng's sub-buffers are at most 4 GiB; a
/// length beyond this is a broken answer, not a packet).
const MAX_PACKET: u64 = 1 << 31;

/// One session the relay serves.
#[derive(Debug, Clone)]
pub struct RelaySession {
    pub id: u64,
    pub live_timer_us: u32,
    pub streams: u32,
    pub hostname: String,
    pub name: String,
}

struct DataStream {
    trace: u64,
    /// Where its packets go, relative to a poll's directory.
    file: PathBuf,
    /// Packets got and not wholly handed over yet.
    pending: Vec<Packet>,
    /// The stream has nothing before this (its last packet's end, or an inactivity beacon).
    known_end: Option<u64>,
    hup: bool,
}

struct Packet {
    begin: u64,
    end: u64,
    data: Vec<u8>,
    /// Its events up to this time were handed over already (it straddled a poll's time).
    fed_to: Option<u64>,
}

struct MetaStream {
    id: u64,
    /// Its directory, relative to a poll's directory.
    dir: PathBuf,
    text: Vec<u8>,
}

/// What one `poll` handed over.
#[derive(Debug, Default, Clone)]
pub struct Polled {
    pub packets: u64,
    pub bytes: u64,
    /// Every stream the session had ended (the session was destroyed): nothing more will come.
    pub ended: bool,
    /// The events to read from the directory are those up to this time (clock
    /// cycles; None: all); a packet that straddles it is handed over again by
    /// the next poll, with the events after it.
    pub upto: Option<u64>,
    /// Stream files (relative to the directory) whose first packet was handed
    /// over before up to a time: only its events after that time are new.
    pub after: Vec<(PathBuf, u64)>,
}

pub struct LiveClient {
    sock: TcpStream,
    addr: String,
    session: Option<u64>,
    streams: BTreeMap<u64, DataStream>,
    /// Per trace id, its metadata stream.
    meta: HashMap<u64, MetaStream>,
    /// The new-streams answer said the session was closed.
    session_hup: bool,
    /// Packets and bytes got from the relay, over the whole session.
    pub packets: u64,
    pub bytes: u64,
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// A relative path the relay gave, refused if it could leave the directory it is joined to.
fn relative(p: &str, what: &str) -> Result<PathBuf> {
    let path = Path::new(p);
    if p.is_empty() || !path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(CtfError::NotFound(format!("lttng-relayd: a stream's {what} is not a relative path: {p:?}")));
    }
    Ok(path.to_path_buf())
}

impl LiveClient {
    /// Connects to a relay's viewer port (`host:port`) and makes the viewer session.
    pub fn connect(addr: &str) -> Result<Self> {
        let sock = TcpStream::connect(addr).map_err(|e| CtfError::Io { path: format!("lttng-relayd {addr}"), msg: e.to_string() })?;
        let _ = sock.set_nodelay(true);
        let _ = sock.set_read_timeout(Some(IO_TIMEOUT));
        let _ = sock.set_write_timeout(Some(IO_TIMEOUT));
        let mut c = LiveClient {
            sock,
            addr: addr.to_string(),
            session: None,
            streams: BTreeMap::new(),
            meta: HashMap::new(),
            session_hup: false,
            packets: 0,
            bytes: 0,
        };
        let mut p = Vec::with_capacity(20);
        p.extend_from_slice(&0u64.to_be_bytes());
        p.extend_from_slice(&2u32.to_be_bytes()); // major
        p.extend_from_slice(&4u32.to_be_bytes()); // minor: the 2.4 session list
        p.extend_from_slice(&1u32.to_be_bytes()); // a command connection
        c.send(CONNECT, &p)?;
        let r = c.recv(20)?;
        if be32(&r, 8) != 2 {
            return Err(c.fail(&format!("protocol major version {} (2 expected)", be32(&r, 8))));
        }
        c.send(CREATE_SESSION, &[])?;
        let st = be32(&c.recv(4)?, 0);
        if st != 1 {
            return Err(c.fail(&format!("could not create a viewer session (status {st})")));
        }
        Ok(c)
    }

    fn fail(&self, msg: &str) -> CtfError {
        CtfError::Io { path: format!("lttng-relayd {}", self.addr), msg: msg.to_string() }
    }

    fn io(&self, e: std::io::Error) -> CtfError {
        self.fail(&e.to_string())
    }

    fn send(&mut self, cmd: u32, payload: &[u8]) -> Result<()> {
        let mut b = Vec::with_capacity(16 + payload.len());
        b.extend_from_slice(&(payload.len() as u64).to_be_bytes());
        b.extend_from_slice(&cmd.to_be_bytes());
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(payload);
        self.sock.write_all(&b).map_err(|e| self.io(e))
    }

    fn recv(&mut self, n: usize) -> Result<Vec<u8>> {
        let mut b = vec![0u8; n];
        self.sock.read_exact(&mut b).map_err(|e| self.io(e))?;
        Ok(b)
    }

    /// The sessions the relay serves.
    pub fn sessions(&mut self) -> Result<Vec<RelaySession>> {
        self.send(LIST_SESSIONS, &[])?;
        let n = be32(&self.recv(4)?, 0) as usize;
        if n > 100_000 {
            return Err(self.fail(&format!("a list of {n} sessions")));
        }
        let b = self.recv(n * SESSION_LEN)?;
        Ok(b.chunks_exact(SESSION_LEN)
            .map(|s| RelaySession {
                id: be64(s, 0),
                live_timer_us: be32(s, 8),
                streams: be32(s, 16),
                hostname: c_string(&s[20..20 + HOST_NAME_MAX]),
                name: c_string(&s[20 + HOST_NAME_MAX..]),
            })
            .collect())
    }

    /// Attaches to the session named `name`, from its beginning, waiting up to
    /// `timeout` for the relay to know it.
    pub fn attach(&mut self, name: &str, timeout: Duration) -> Result<RelaySession> {
        let t0 = Instant::now();
        let s = loop {
            if let Some(s) = self.sessions()?.into_iter().find(|s| s.name == name) {
                break s;
            }
            if t0.elapsed() > timeout {
                return Err(self.fail(&format!("no live session {name:?} after {:.1} s", timeout.as_secs_f64())));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut p = Vec::with_capacity(20);
        p.extend_from_slice(&s.id.to_be_bytes());
        p.extend_from_slice(&0u64.to_be_bytes());
        p.extend_from_slice(&1u32.to_be_bytes()); // from the beginning
        self.send(ATTACH_SESSION, &p)?;
        let h = self.recv(8)?;
        let (st, n) = (be32(&h, 0), be32(&h, 4));
        if st != 1 {
            return Err(self.fail(&format!("could not attach to session {name:?} (status {st})")));
        }
        self.session = Some(s.id);
        self.add_streams(n)?;
        Ok(s)
    }

    fn add_streams(&mut self, n: u32) -> Result<()> {
        if n > 1_000_000 {
            return Err(self.fail(&format!("a list of {n} streams")));
        }
        let b = self.recv(n as usize * STREAM_LEN)?;
        for s in b.chunks_exact(STREAM_LEN) {
            let (id, trace, is_meta) = (be64(s, 0), be64(s, 8), be32(s, 16) != 0);
            let dir = relative(&c_string(&s[20..20 + PATH_MAX]), "path")?;
            let channel = relative(&c_string(&s[20 + PATH_MAX..]), "channel name")?;
            if is_meta {
                self.meta.entry(trace).or_insert(MetaStream { id, dir, text: Vec::new() });
            } else {
                self.streams.entry(id).or_insert(DataStream {
                    trace,
                    file: dir.join(channel),
                    pending: Vec::new(),
                    known_end: None,
                    hup: false,
                });
            }
        }
        Ok(())
    }

    fn new_streams(&mut self) -> Result<()> {
        let Some(sid) = self.session else { return Ok(()) };
        self.send(GET_NEW_STREAMS, &sid.to_be_bytes())?;
        let h = self.recv(8)?;
        let (st, n) = (be32(&h, 0), be32(&h, 4));
        match st {
            1 => self.add_streams(n),
            2 => Ok(()),
            4 => {
                self.session_hup = true;
                Ok(())
            }
            _ => Err(self.fail(&format!("new streams: status {st}"))),
        }
    }

    fn metadata(&mut self, trace: u64) -> Result<()> {
        let Some(id) = self.meta.get(&trace).map(|m| m.id) else { return Ok(()) };
        loop {
            self.send(GET_METADATA, &id.to_be_bytes())?;
            let h = self.recv(12)?;
            let (len, st) = (be64(&h, 0), be32(&h, 8));
            match st {
                1 if len <= MAX_PACKET => {
                    let b = self.recv(len as usize)?;
                    self.meta.get_mut(&trace).unwrap().text.extend_from_slice(&b);
                }
                2 => return Ok(()),
                // its stream closed with the session: its text is all there is
                3 if !self.meta[&trace].text.is_empty() => return Ok(()),
                _ => return Err(self.fail(&format!("metadata of trace {trace}: status {st}, {len} bytes"))),
            }
        }
    }

    /// Gets what each stream has ready. Returns whether any packet came.
    fn fetch(&mut self) -> Result<bool> {
        self.new_streams()?;
        let ids: Vec<u64> = self.streams.iter().filter(|(_, s)| !s.hup).map(|(&i, _)| i).collect();
        let mut got = false;
        for id in ids {
            for _ in 0..MAX_PACKETS_PER_POLL {
                self.send(GET_NEXT_INDEX, &id.to_be_bytes())?;
                let ix = self.recv(64)?;
                let (offset, size_bits, begin, end) = (be64(&ix, 0), be64(&ix, 8), be64(&ix, 24), be64(&ix, 32));
                let (st, flags) = (be32(&ix, 56), be32(&ix, 60));
                let trace = self.streams[&id].trace;
                if flags & FLAG_NEW_METADATA != 0 {
                    self.metadata(trace)?;
                }
                if flags & FLAG_NEW_STREAM != 0 {
                    self.new_streams()?;
                }
                match st {
                    INDEX_OK => {
                        let len = size_bits / 8;
                        if len > MAX_PACKET {
                            return Err(self.fail(&format!("stream {id}: a packet of {len} bytes")));
                        }
                        let mut p = Vec::with_capacity(20);
                        p.extend_from_slice(&id.to_be_bytes());
                        p.extend_from_slice(&offset.to_be_bytes());
                        p.extend_from_slice(&(len as u32).to_be_bytes());
                        self.send(GET_PACKET, &p)?;
                        let h = self.recv(12)?;
                        let (pst, plen) = (be32(&h, 0), be32(&h, 4));
                        if pst != 1 || plen as u64 != len {
                            return Err(self.fail(&format!("stream {id}: packet at {offset}: status {pst}, {plen} of {len} bytes")));
                        }
                        let data = self.recv(len as usize)?;
                        self.packets += 1;
                        self.bytes += len;
                        let s = self.streams.get_mut(&id).unwrap();
                        s.known_end = Some(s.known_end.map_or(end, |k| k.max(end)));
                        s.pending.push(Packet { begin, end, data, fed_to: None });
                        got = true;
                    }
                    INDEX_INACTIVE => {
                        let s = self.streams.get_mut(&id).unwrap();
                        s.known_end = Some(s.known_end.map_or(end, |k| k.max(end)));
                        break;
                    }
                    INDEX_HUP => {
                        self.streams.get_mut(&id).unwrap().hup = true;
                        break;
                    }
                    INDEX_RETRY | INDEX_EOF => break,
                    _ => return Err(self.fail(&format!("stream {id}: next index: status {st}"))),
                }
            }
        }
        Ok(got)
    }

    /// Gets what the relay has, and writes into `out` (a directory made here,
    /// which must not exist) the packets with events up to the time every
    /// live stream is complete to (`Polled::upto`): a CTF trace (each trace's
    /// metadata and its streams' files). Nothing written: no directory.
    pub fn poll(&mut self, out: &Path) -> Result<Polled> {
        self.fetch()?;
        let all_hup = self.streams.values().all(|s| s.hup);
        let ended = all_hup && (self.session_hup || !self.streams.is_empty());
        // a trace whose metadata has not come yet: its packets wait for it
        let traces_pending: Vec<u64> = self.meta.iter().filter(|(_, m)| m.text.is_empty()).map(|(&t, _)| t).collect();
        for t in traces_pending {
            self.metadata(t)?;
        }
        let ready = |s: &DataStream| self.meta.get(&s.trace).is_some_and(|m| !m.text.is_empty());
        // the time every stream still live is complete up to (a stream that never had a
        // packet nor a beacon does not hold the others up); all when every one ended
        let upto = if all_hup { None } else { self.streams.values().filter(|s| !s.hup).filter_map(|s| s.known_end).min() };
        let waiting: Vec<bool> = self.streams.values().map(|s| !ready(s)).collect();
        let mut res = Polled { ended, upto, ..Polled::default() };
        let mut made = false;
        let mut traces = Vec::new();
        for (s, wait) in self.streams.values_mut().zip(waiting) {
            if wait {
                continue;
            }
            // the packets with events up to `upto`; those ending after it stay for the next poll
            let n = s.pending.iter().take_while(|p| upto.is_none_or(|u| p.begin <= u && p.fed_to.is_none_or(|f| f < u))).count();
            if n == 0 {
                continue;
            }
            if !made {
                std::fs::create_dir(out).map_err(|e| CtfError::Io { path: out.display().to_string(), msg: e.to_string() })?;
                made = true;
            }
            let path = out.join(&s.file);
            let wr = |e: std::io::Error| CtfError::Io { path: path.display().to_string(), msg: e.to_string() };
            std::fs::create_dir_all(path.parent().unwrap_or(out)).map_err(wr)?;
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(wr)?;
            if let Some(fed) = s.pending[0].fed_to {
                res.after.push((s.file.clone(), fed));
            }
            for p in &s.pending[..n] {
                f.write_all(&p.data).map_err(wr)?;
                res.packets += 1;
                res.bytes += p.data.len() as u64;
            }
            let whole = s.pending[..n].iter().take_while(|p| upto.is_none_or(|u| p.end <= u)).count();
            s.pending.drain(..whole);
            if let (Some(u), Some(p)) = (upto, s.pending.first_mut()) {
                if p.begin <= u {
                    p.fed_to = Some(u);
                }
            }
            if !traces.contains(&s.trace) {
                traces.push(s.trace);
            }
        }
        for t in traces {
            let m = &self.meta[&t];
            let path = out.join(&m.dir).join("metadata");
            std::fs::write(&path, &m.text).map_err(|e| CtfError::Io { path: path.display().to_string(), msg: e.to_string() })?;
        }
        Ok(res)
    }

    /// Data streams known, and those ended.
    pub fn stream_counts(&self) -> (usize, usize) {
        (self.streams.len(), self.streams.values().filter(|s| s.hup).count())
    }
}
