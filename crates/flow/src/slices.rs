//! The slice driver (docs/analyses.md, "Slices"): a data-flow search or the causal
//! links over a model handed over in slices, so that memory depends on the slice,
//! not on the trace.
//!
//! `over_slices` plans the slices in output time order: which id ranges a slice
//! holds (`Blocks`), the latest run of each callback and publication of each
//! publisher before it (`Anchors`), and what was answered from the database
//! (`History`); it starts again from an output whose flows reach beyond its slice,
//! with what the slice lacked answered, else with twice the reach. What it reads
//! comes from a `SliceSource` (the database: roscope-py's implementation calls the
//! SQL of `roscope.flow.slices`), what it searches goes to a `SliceSearch`.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use roscope_model::table::Table;

use crate::causal::{causal_links_in, CausalLink, CausalState, Policy};
use crate::dataflow::{FlowOptions, FlowResult, IdMap, Need, Window};
use crate::index::Index;
use crate::model::{Kind, Model, NONE};
use crate::races::OverlapSweep;
use crate::search::FlowSearch;

const MIN: i64 = i64::MIN;
const MAX: i64 = i64::MAX;

/// Ids per block of the summaries that choose a slice's id ranges: at most this
/// many, and about a quarter of a slice.
pub const BLOCK: i64 = 4096;
/// Searches of one output over slices with answers from the database (`History`)
/// before the slice reaches further instead.
pub const ANSWER_ROUNDS: u32 = 32;

/// A slice's id ranges in the model: publications a..b, runs c..d.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranges {
    pub a: i64,
    pub b: i64,
    pub c: i64,
    pub d: i64,
}

impl Ranges {
    fn has_pub(&self, p: i64) -> bool {
        self.a <= p && p < self.b
    }

    fn has_run(&self, r: i64) -> bool {
        self.c <= r && r < self.d
    }
}

/// Rows of the model's tables.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub publications: i64,
    pub runs: i64,
    pub callbacks: i64,
    pub publishers: i64,
}

/// Per block of ids (`SliceSource::blocks`), in block order; None: no value (null).
#[derive(Clone, Debug, Default)]
pub struct BlockRows {
    /// Per block of publications: the least and greatest time (the earliest
    /// layer's, as the flow reads it), the least and greatest run id.
    pub pubs: Vec<[Option<i64>; 4]>,
    /// Per block of runs: the least and greatest start.
    pub runs: Vec<[Option<i64>; 2]>,
    /// Per block of runs with transport links: (block, least publication, greatest).
    pub links: Vec<(i64, i64, i64)>,
}

/// An output (its time and publication id, the model's) whose flows reach beyond
/// its slice, and what the slice lacked there (`Need`, ids the model's).
pub type Beyond = ((i64, i64), Vec<Need>);

/// What the slice driver reads from the whole model (a database). Ids are the
/// model's; `NONE` is "none".
pub trait SliceSource {
    type Error;
    fn counts(&mut self) -> Result<Counts, Self::Error>;
    /// The summaries per block of `block` ids (`BlockRows`).
    fn blocks(&mut self, block: i64) -> Result<BlockRows, Self::Error>;
    /// The model of publications a..b then `xp`, runs c..d then `xr` (ids rebased to
    /// 0, in that order; a reference out of the slice `NONE`); callbacks, topics and
    /// the rest whole. Empty ranges and no extras: callbacks and topics only.
    fn slice(&mut self, r: Ranges, xp: &[i64], xr: &[i64]) -> Result<Model, Self::Error>;
    /// Per callback, its latest run (callback, start, run id; the greatest (start,
    /// run id)) among runs `ids.0..ids.1` that started in [since, upto).
    fn latest_runs(&mut self, ids: (i64, i64), since: i64, upto: i64) -> Result<Vec<(i64, i64, i64)>, Self::Error>;
    /// Per publisher, its latest publication (publisher, time, publication id) among
    /// publications `ids.0..ids.1` made in [since, upto).
    fn latest_publications(&mut self, ids: (i64, i64), since: i64, upto: i64) -> Result<Vec<(i64, i64, i64)>, Self::Error>;
    /// The publications whose transport links fed `runs`.
    fn linked_publications(&mut self, runs: &[i64]) -> Result<Vec<i64>, Self::Error>;
    /// The runs in which `pubs` were published.
    fn runs_of(&mut self, pubs: &[i64]) -> Result<Vec<i64>, Self::Error>;
    /// The latest completed run of `callback` before `t` (`Need::RunBefore`), or `NONE`.
    fn run_before(&mut self, callback: i64, t: i64) -> Result<i64, Self::Error>;
    /// The newest publication on `topic` before `t` (`Need::NewestBefore`), or `NONE`.
    fn newest_before(&mut self, topic: &str, t: i64) -> Result<i64, Self::Error>;
}

/// A search that `over_slices` hands slices to.
pub trait SliceSearch {
    type Error;
    /// Searches the outputs of `w` in slice `m` (ids mapped to the model's by
    /// `ids`); returns where the flows reach beyond the slice, if they do.
    fn run(&mut self, m: &Model, ids: IdMap, w: Window) -> Result<Option<Beyond>, Self::Error>;
    /// Whether the search is over (a cap): no slice after this one.
    fn stopped(&self) -> bool {
        false
    }
}

/// Why `over_slices` failed.
#[derive(Debug)]
pub enum SliceError<E> {
    /// A read or the search failed.
    Failed(E),
    /// The search over the whole model found flows beyond it (a bug).
    BeyondWholeModel,
}

impl<E> From<E> for SliceError<E> {
    fn from(e: E) -> Self {
        SliceError::Failed(e)
    }
}

/// What the slicing did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceStats {
    pub count: u64,
    pub restarts: u64,
    pub answered_from_database: u64,
    /// The reach at the end (it doubles when answers bring nothing new).
    pub reach_ns: i64,
    /// The most publications and runs one slice held.
    pub peak_instances: i64,
    pub publications_per_slice: i64,
    /// When the search stopped (a cap) before the last slice: the time from which no
    /// output was searched.
    pub rest_from: Option<i64>,
}

/// The values of a block summary as the planner compares them: f64, NaN for none.
fn float(x: Option<i64>) -> f64 {
    x.map_or(f64::NAN, |v| v as f64)
}

/// `v[from..to]`, clamped to `v`.
fn part(v: &[f64], from: i64, to: i64) -> &[f64] {
    let to = usize::try_from(to).unwrap_or(0).min(v.len());
    let from = usize::try_from(from).unwrap_or(0).min(to);
    &v[from..to]
}

fn finite_min(v: impl Iterator<Item = f64>) -> Option<f64> {
    v.filter(|x| x.is_finite()).reduce(f64::min)
}

fn finite_max(v: impl Iterator<Item = f64>) -> Option<f64> {
    v.filter(|x| x.is_finite()).reduce(f64::max)
}

/// Per block of `block` ids, what choosing a slice's id ranges needs: the times of
/// the publications and runs, the runs the publications were made in, the
/// publications linked to the runs. Read once, a few values per block.
pub struct Blocks {
    block: i64,
    pub n_pubs: i64,
    pub n_runs: i64,
    pb_min: Vec<f64>,
    pb_max: Vec<f64>,
    pb_run_min: Vec<f64>,
    pb_run_max: Vec<f64>,
    run_min: Vec<f64>,
    run_max: Vec<f64>,
    lk_min: Vec<f64>,
    lk_max: Vec<f64>,
    /// The earliest and latest time of a publication or a run start (0: none).
    pub t_min: i64,
    pub t_max: i64,
}

impl Blocks {
    pub fn new(rows: &BlockRows, block: i64, n_pubs: i64, n_runs: i64) -> Blocks {
        let col = |i: usize| rows.pubs.iter().map(|r| float(r[i])).collect::<Vec<f64>>();
        let (pb_min, pb_max, pb_run_min, pb_run_max) = (col(0), col(1), col(2), col(3));
        let run_min: Vec<f64> = rows.runs.iter().map(|r| float(r[0])).collect();
        let run_max: Vec<f64> = rows.runs.iter().map(|r| float(r[1])).collect();
        let (mut lk_min, mut lk_max) = (vec![f64::INFINITY; run_min.len()], vec![f64::NEG_INFINITY; run_min.len()]);
        for &(k, lo, hi) in &rows.links {
            if let Some(i) = usize::try_from(k).ok().filter(|&i| i < lk_min.len()) {
                (lk_min[i], lk_max[i]) = (lo as f64, hi as f64);
            }
        }
        let any = !pb_min.is_empty() || !run_min.is_empty();
        let t_min = if any { finite_min(pb_min.iter().chain(&run_min).copied()).map_or(0, |t| t as i64) } else { 0 };
        let t_max = if any { finite_max(pb_max.iter().chain(&run_max).copied()).map_or(0, |t| t as i64) } else { 0 };
        Blocks { block, n_pubs, n_runs, pb_min, pb_max, pb_run_min, pb_run_max, run_min, run_max, lk_min, lk_max, t_min, t_max }
    }

    /// Where a slice whose outputs start at `t_a` ends, so that it holds about
    /// `per_slice` publications (`i64::MAX`: at the end of the trace). By count, not
    /// by time: a trace may be dense in places and empty in others (two recordings
    /// loaded together).
    pub fn end_of_slice(&self, t_a: i64, per_slice: i64) -> i64 {
        let first = self.pb_max.iter().position(|&x| x >= t_a as f64).unwrap_or(self.pb_max.len());
        let blocks = (-(-per_slice).div_euclid(self.block)).max(1);
        let j = first as i64 + blocks;
        match usize::try_from(j).ok().and_then(|j| self.pb_min.get(j)) {
            None => MAX,
            Some(&t) => t_a.saturating_add(1).max(t as i64),
        }
    }

    /// Publications a..b and runs c..d that hold every publication and run whose
    /// time is in [lo, hi), and what each of those references (ids in blocks: a few
    /// more).
    pub fn ranges(&self, lo: i64, hi: i64) -> Ranges {
        let bs = self.block;
        let (lo_f, hi_f) = (lo as f64, hi as f64);
        let pb_in: Vec<bool> = self.pb_max.iter().map(|&x| x >= lo_f).collect();
        let run_in: Vec<bool> = self.run_max.iter().map(|&x| x >= lo_f).collect();
        // The least of an id (exact) and a summary's value (an id too, as f64).
        let least = |id: i64, v: Option<f64>| v.filter(|&v| v < id as f64).map_or(id, |v| v as i64);
        let pf = pb_in.iter().position(|&x| x).map_or(self.n_pubs, |i| i as i64 * bs);
        let rf = run_in.iter().position(|&x| x).map_or(self.n_runs, |i| i as i64 * bs);
        let a = least(pf, finite_min(self.lk_min.iter().zip(&run_in).filter(|p| *p.1).map(|p| *p.0)));
        let c = least(rf, finite_min(self.pb_run_min.iter().zip(&pb_in).filter(|p| *p.1).map(|p| *p.0)));
        let b = self.pb_min.iter().rposition(|&x| x < hi_f).map_or(0, |i| (i as i64 + 1) * bs);
        let d = self.run_min.iter().rposition(|&x| x < hi_f).map_or(0, |i| (i as i64 + 1) * bs);
        let beyond = |v: &[f64]| finite_max(v.iter().copied()).map_or(0, |x| x as i64 + 1);
        let b = b.max(beyond(part(&self.lk_max, c / bs, d.max(c) / bs + 1)));
        let d = d.max(beyond(part(&self.pb_run_max, a / bs, b.max(a) / bs + 1)));
        Ranges { a, b: b.min(self.n_pubs), c, d: d.min(self.n_runs) }
    }
}

/// Per callback its latest run, per publisher its latest publication, before the
/// time up to which slices have been folded in (`fold`): they give a slice's
/// horizons (`Window::lo_cb`, `lo_pub`: a callback that ran once at the start is
/// still found) and the instances it holds besides its id ranges.
pub struct Anchors {
    n_cb: i64,
    n_pu: i64,
    upto: i64,
    run: HashMap<i64, (i64, i64)>,
    publication: HashMap<i64, (i64, i64)>,
}

impl Anchors {
    pub fn new(callbacks: i64, publishers: i64) -> Anchors {
        Anchors { n_cb: callbacks, n_pu: publishers, upto: MIN, run: HashMap::new(), publication: HashMap::new() }
    }

    /// Folds in the publications and runs of `r` (a slice's) from the time folded
    /// so far up to `upto`; the slice held all of that time.
    pub fn fold<S: SliceSource>(&mut self, src: &mut S, r: Ranges, upto: i64) -> Result<(), S::Error> {
        if upto <= self.upto {
            return Ok(());
        }
        fn keep(into: &mut HashMap<i64, (i64, i64)>, rows: Vec<(i64, i64, i64)>) {
            for (key, t, id) in rows {
                if (t, id) > into.get(&key).copied().unwrap_or((MIN, MIN)) {
                    into.insert(key, (t, id));
                }
            }
        }
        keep(&mut self.run, src.latest_runs((r.c, r.d), self.upto, upto)?);
        keep(&mut self.publication, src.latest_publications((r.a, r.b), self.upto, upto)?);
        self.upto = upto;
        Ok(())
    }

    /// For a slice from `lo`: the horizon of each callback and each publisher, and
    /// the runs and publications before `lo` the slice must hold for them.
    pub fn horizons(&self, lo: i64) -> (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>) {
        let one = |n: i64, latest: &HashMap<i64, (i64, i64)>| {
            let (mut out, mut extra) = (Vec::new(), Vec::new());
            for key in 0..n {
                match latest.get(&key) {
                    None => out.push(MIN), // none before (everything before `lo` was folded in)
                    Some(&(t, id)) if t < lo => {
                        out.push(t);
                        extra.push(id);
                    }
                    Some(_) => out.push(lo), // a slice searched again from further back: not known before `lo`
                }
            }
            (out, extra)
        };
        let (lo_cb, runs) = one(self.n_cb, &self.run);
        let (lo_pub, pubs) = one(self.n_pu, &self.publication);
        (lo_cb, lo_pub, runs, pubs)
    }
}

/// Sorted, without duplicates, and without those `inside` holds.
fn outside(ids: impl IntoIterator<Item = i64>, inside: impl Fn(i64) -> bool) -> Vec<i64> {
    let mut v: Vec<i64> = ids.into_iter().filter(|&x| !inside(x)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The runs and publications a slice with ranges `r` holds besides them: `runs`
/// and `pubs` (its anchors), the publications linked to those runs and the runs of
/// those publications; none of them in the ranges.
fn extras<S: SliceSource>(src: &mut S, r: Ranges, runs: &[i64], pubs: &[i64]) -> Result<(Vec<i64>, Vec<i64>), S::Error> {
    let runs_of = if pubs.is_empty() { Vec::new() } else { src.runs_of(pubs)? };
    let linked = if runs.is_empty() { Vec::new() } else { src.linked_publications(runs)? };
    let xr = outside(runs.iter().copied().chain(runs_of), |x| r.has_run(x));
    let xp = outside(pubs.iter().copied().chain(linked), |x| r.has_pub(x));
    Ok((xr, xp))
}

/// What slices lacked (`Need`), answered from the whole model: the latest completed
/// run of a callback before a time, the newest publication on a topic before a
/// time, a node's references. The answers and the instances they name go into
/// every later slice, up to `CAP` instances (then they are dropped and asked again
/// when needed).
pub struct History {
    topics: Vec<String>,
    runs_before: HashMap<(i64, i64), i64>,
    newest_before: HashMap<(i64, i64), i64>,
    complete_runs: HashSet<i64>,
    complete_pubs: HashSet<i64>,
    runs: HashSet<i64>,
    pubs: HashSet<i64>,
}

impl History {
    pub const CAP: usize = 100_000;

    /// `topics`: the model's topic names (`Need::NewestBefore` names one by index).
    pub fn new(topics: Vec<String>) -> History {
        History {
            topics,
            runs_before: HashMap::new(),
            newest_before: HashMap::new(),
            complete_runs: HashSet::new(),
            complete_pubs: HashSet::new(),
            runs: HashSet::new(),
            pubs: HashSet::new(),
        }
    }

    fn clear(&mut self) {
        *self = History::new(std::mem::take(&mut self.topics));
    }

    /// Answers `needs`; false when none of them was new (the slice must reach
    /// further instead).
    pub fn answer<S: SliceSource>(&mut self, src: &mut S, needs: &[Need]) -> Result<bool, S::Error> {
        let nodes = |publication: bool, done: &HashSet<i64>| -> Vec<i64> {
            needs
                .iter()
                .filter_map(|n| match *n {
                    Need::Node(k, id) if (k == Kind::Pub) == publication && !done.contains(&id) => Some(id),
                    _ => None,
                })
                .collect()
        };
        let (new_runs, new_pubs) = (nodes(false, &self.complete_runs), nodes(true, &self.complete_pubs));
        let mut new = !new_runs.is_empty() || !new_pubs.is_empty();
        if !new_runs.is_empty() {
            self.complete_runs.extend(&new_runs);
            self.runs.extend(&new_runs);
            self.pubs.extend(src.linked_publications(&new_runs)?);
        }
        if !new_pubs.is_empty() {
            self.complete_pubs.extend(&new_pubs);
            self.pubs.extend(&new_pubs);
            self.runs.extend(src.runs_of(&new_pubs)?);
        }
        for n in needs {
            match *n {
                Need::RunBefore(cb, t) if !self.runs_before.contains_key(&(cb, t)) => {
                    let r = src.run_before(cb, t)?;
                    self.runs_before.insert((cb, t), r);
                    if r >= 0 {
                        self.runs.insert(r);
                    }
                    new = true;
                }
                Need::NewestBefore(topic, t) if !self.newest_before.contains_key(&(topic, t)) => {
                    let name = usize::try_from(topic).ok().and_then(|i| self.topics.get(i));
                    let p = match name {
                        Some(name) => src.newest_before(name, t)?,
                        None => NONE,
                    };
                    self.newest_before.insert((topic, t), p);
                    if p >= 0 {
                        self.pubs.insert(p);
                    }
                    new = true;
                }
                _ => {}
            }
        }
        if self.runs.len() + self.pubs.len() > Self::CAP {
            self.clear();
        }
        Ok(new)
    }

    /// Puts the answers into `w`, the window of a slice with ranges `r` and extra
    /// runs `xr` and publications `xp` (sorted; they hold the history's runs and
    /// publications).
    pub fn answers(&self, r: Ranges, xr: &[i64], xp: &[i64], w: &mut Window) {
        let local = |g: i64, lo: i64, hi: i64, extra: &[i64]| -> i64 {
            if g < 0 {
                NONE
            } else if lo <= g && g < hi {
                g - lo
            } else {
                extra.binary_search(&g).map_or(NONE, |i| (hi - lo) + i as i64)
            }
        };
        let run = |g| local(g, r.c, r.d, xr);
        let publication = |g| local(g, r.a, r.b, xp);
        w.runs_before = self.runs_before.iter().map(|(&k, &v)| (k, run(v))).collect();
        w.newest_before = self.newest_before.iter().map(|(&k, &v)| (k, publication(v))).collect();
        w.complete = self
            .complete_runs
            .iter()
            .map(|&g| (Kind::Run, run(g)))
            .chain(self.complete_pubs.iter().map(|&g| (Kind::Pub, publication(g))))
            .collect();
    }
}

/// Hands `search` the model slice after slice in output time order: each slice
/// holds its outputs' time span (about `per_slice` publications) and `reach_ns`
/// before and after it, and the latest run of each callback and publication of
/// each publisher before that (`Anchors`). When what an output needs reaches beyond
/// its slice, the search goes on from that output: with those needs answered from
/// the database (`history`, `History`) while that brings something new, else with
/// twice the reach. The slices end when `search.stopped()` says so.
pub fn over_slices<S, F>(
    src: &mut S,
    search: &mut F,
    per_slice: i64,
    reach_ns: i64,
    mut history: Option<&mut History>,
) -> Result<SliceStats, SliceError<S::Error>>
where
    S: SliceSource,
    F: SliceSearch<Error = S::Error>,
{
    let n = src.counts()?;
    let block = BLOCK.min(16.max(per_slice.div_euclid(4)));
    let bl = Blocks::new(&src.blocks(block)?, block, n.publications, n.runs);
    let mut anchors = Anchors::new(n.callbacks, n.publishers);
    let mut st = SliceStats { publications_per_slice: per_slice, ..SliceStats::default() };
    let (mut out_from, mut reach, mut prev, mut rounds) = ((MIN, MIN), reach_ns, None, 0u32);
    let out_to = loop {
        let t_a = if out_from.0 == MIN { bl.t_min } else { out_from.0 };
        let out_to = bl.end_of_slice(t_a, per_slice);
        let lo = match out_from.0.checked_sub(reach) {
            Some(lo) if out_from.0 != MIN && lo > bl.t_min => lo,
            _ => MIN,
        };
        let hi = match out_to.checked_add(reach) {
            Some(hi) if out_to != MAX && hi <= bl.t_max => hi,
            _ => MAX,
        };
        let mut r = bl.ranges(lo, hi);
        if lo == MIN {
            (r.a, r.c) = (0, 0);
        }
        if hi == MAX {
            (r.b, r.d) = (bl.n_pubs, bl.n_runs);
        }
        let mut w = Window { lo, hi, out_to, ..Window::all() };
        let (mut xr, mut xp) = (Vec::new(), Vec::new());
        if lo != MIN {
            if let Some(p) = prev {
                anchors.fold(src, p, lo)?;
            }
            let (lo_cb, lo_pub, runs, pubs) = anchors.horizons(lo);
            (xr, xp) = extras(src, r, &runs, &pubs)?;
            if let Some(h) = history.as_deref() {
                xr = outside(xr.into_iter().chain(h.runs.iter().copied()), |x| r.has_run(x));
                xp = outside(xp.into_iter().chain(h.pubs.iter().copied()), |x| r.has_pub(x));
                h.answers(r, &xr, &xp, &mut w);
            }
            (w.lo_cb, w.lo_pub) = (lo_cb, lo_pub);
        }
        let model = src.slice(r, &xp, &xr)?;
        w.out_from = if out_from.1 == MIN { out_from } else { (out_from.0, out_from.1 - r.a) };
        let held = (r.b - r.a) + (r.d - r.c) + (xp.len() + xr.len()) as i64;
        let ids = IdMap { pub_base: r.a, pub_n: r.b - r.a, pub_extra: xp, run_base: r.c, run_n: r.d - r.c, run_extra: xr };
        let beyond = search.run(&model, ids, w)?;
        drop(model);
        st.count += 1;
        prev = Some(r);
        st.peak_instances = st.peak_instances.max(held);
        if let Some((at, needs)) = beyond {
            if (lo, hi) == (MIN, MAX) {
                return Err(SliceError::BeyondWholeModel);
            }
            st.restarts += 1;
            rounds = if at == out_from { rounds + 1 } else { 1 };
            let answered = match history.as_deref_mut() {
                Some(h) if rounds <= ANSWER_ROUNDS && !needs.is_empty() => h.answer(src, &needs)?,
                _ => false,
            };
            if answered {
                st.answered_from_database += 1;
            } else {
                reach = reach.saturating_mul(2);
            }
            out_from = at;
            continue;
        }
        if out_to == MAX || search.stopped() {
            break out_to;
        }
        out_from = (out_to, MIN);
    };
    st.reach_ns = reach;
    st.rest_from = (out_to != MAX).then_some(out_to);
    Ok(st)
}

/// A data-flow search with its options, over the whole model or slice after slice
/// (`over_slices`): the search's cap is shared by the slices, and every slice must
/// name the callbacks and topics of the model the options were made for.
pub struct SlicedFlowSearch {
    search: FlowSearch,
    pub o: FlowOptions,
    max_flows: usize,
    /// The model's callbacks and topics (`Model::statics`).
    pub statics: Model,
    /// Seconds spent searching (reads and conversions not counted).
    pub seconds: f64,
}

impl SlicedFlowSearch {
    pub fn new(m: &Model, o: FlowOptions, all_steps: bool, chunk_rows: usize) -> Self {
        SlicedFlowSearch { search: FlowSearch::new(all_steps, chunk_rows), max_flows: o.max_flows, o, statics: m.statics(), seconds: 0.0 }
    }

    /// Searches the outputs of `w` in slice `m` (ids mapped to the model's by `ids`),
    /// handing chunks of results to `emit` (see `FlowSearch::run`).
    pub fn run(&mut self, m: &Model, ids: IdMap, w: Window, emit: &mut dyn FnMut(Table) -> bool) -> Result<Option<Beyond>, String> {
        if m.cb_label.len() != self.statics.cb_label.len() || m.topics != self.statics.topics {
            return Err("the slice's callbacks or topics are not those of the search's model".to_string());
        }
        self.o.window = w;
        self.o.max_flows = self.max_flows.saturating_sub(self.search.result.candidates);
        let t0 = Instant::now();
        let ix = Index::new(m);
        let beyond = self.search.run(&ix, &self.o, ids, emit);
        self.seconds += t0.elapsed().as_secs_f64();
        Ok(beyond)
    }

    /// Whether the search is over: its cap reached, or `emit` refused a chunk.
    pub fn stopped(&self) -> bool {
        self.search.refused || self.search.result.stopped_at.is_some()
    }

    /// Segments found again after the search forgot them (see `FlowSearch`).
    pub fn segments_unsure(&self) -> u64 {
        self.search.segments_unsure()
    }

    /// Whether the search keeps an overlap of callback `a`'s run over `b`'s
    /// (`OverlapSweep::push_kept`): when an intra-node edge of the search depends on
    /// it, the only overlaps that can make a flow uncertain (far fewer than all on a
    /// long trace).
    pub fn keeps_overlap(&self, a: i64, b: i64) -> bool {
        self.o.depends_on(&self.statics, a, b)
    }

    /// Adds the overlaps `sweep` found (kept by `keeps_overlap`) to the search's
    /// (`FlowOptions::overlaps`); returns how many the search now holds.
    pub fn add_overlaps(&mut self, sweep: OverlapSweep) -> usize {
        self.o.overlaps.extend(sweep.found);
        self.o.overlaps.len()
    }

    /// Hands the last chunks to `emit`: the `paths` table and the counts.
    pub fn finish(self, emit: &mut dyn FnMut(Table) -> bool) -> (Table, FlowResult) {
        self.search.finish(&self.statics, emit)
    }
}

/// The causal links whose outputs are in `w` of slice `m` (ids mapped by `ids`),
/// with the model's ids, and the output from which the slice does not hold what the
/// links need (a `Beyond` without needs).
pub fn causal_links_of_slice(
    m: &Model,
    policy: Policy,
    w: &Window,
    st: &mut CausalState,
    ids: &IdMap,
) -> (Vec<CausalLink>, Option<Beyond>) {
    let ix = Index::new(m);
    let (mut links, beyond) = causal_links_in(&ix, policy, w, st);
    for l in links.iter_mut() {
        l.in_pub = ids.publication(l.in_pub);
        l.in_run = ids.run(l.in_run);
        l.out_pub = ids.publication(l.out_pub);
    }
    (links, beyond.map(|(ts, p)| ((ts, ids.publication(p)), Vec::new())))
}
