//! The slice driver's planning (`slices.rs`) on small hand-made models: block
//! summaries, anchors, the history's answers, the sequence of slices with their
//! restarts, and a sliced search against the flows worked out by hand. The reads
//! come from `ModelSource`, which answers what the SQL of `roscope.flow.slices`
//! answers, from a whole model in memory.

use std::collections::HashMap;

use super::{chain, ints, opts, Spec};
use crate::model::Kind;
use crate::slices::Anchors;
use crate::*;

const MIN: i64 = i64::MIN;
const MAX: i64 = i64::MAX;

/// The reads of the slice driver from a whole model in memory (what the SQL of
/// `roscope.flow.slices.Reads` reads from the database), with a log of the reads.
struct ModelSource {
    m: Model,
    reads: Vec<&'static str>,
}

impl ModelSource {
    fn new(m: Model) -> Self {
        ModelSource { m, reads: Vec::new() }
    }
}

fn min_max(v: impl Iterator<Item = i64> + Clone) -> (Option<i64>, Option<i64>) {
    (v.clone().min(), v.max())
}

/// Per key (a run's callback, a publication's publisher), the greatest (time, id)
/// among ids `ids.0..ids.1` whose time is in [since, upto): (key, time, id).
fn latest(ids: (i64, i64), since: i64, upto: i64, key: &[i64], time: &[i64]) -> Vec<(i64, i64, i64)> {
    let mut out: HashMap<i64, (i64, i64)> = HashMap::new();
    for id in ids.0..ids.1 {
        let (k, t) = (key[id as usize], time[id as usize]);
        if since <= t && t < upto && out.get(&k).is_none_or(|&v| (t, id) > v) {
            out.insert(k, (t, id));
        }
    }
    out.into_iter().map(|(k, (t, id))| (k, t, id)).collect()
}

impl SliceSource for ModelSource {
    type Error = String;

    fn counts(&mut self) -> Result<Counts, String> {
        let m = &self.m;
        Ok(Counts {
            publications: m.pb_ts.len() as i64,
            runs: m.run_start.len() as i64,
            callbacks: m.cb_label.len() as i64,
            publishers: m.pub_topic.len() as i64,
        })
    }

    fn blocks(&mut self, block: i64) -> Result<BlockRows, String> {
        let (m, b) = (&self.m, block as usize);
        let pubs = (0..m.pb_ts.len().div_ceil(b))
            .map(|k| {
                let ids = k * b..((k + 1) * b).min(m.pb_ts.len());
                let (t0, t1) = min_max(ids.clone().map(|p| m.pb_ts[p]));
                let (r0, r1) = min_max(ids.map(|p| m.pb_run[p]).filter(|&r| r >= 0));
                [t0, t1, r0, r1]
            })
            .collect();
        let runs = (0..m.run_start.len().div_ceil(b))
            .map(|k| {
                let (t0, t1) = min_max((k * b..((k + 1) * b).min(m.run_start.len())).map(|r| m.run_start[r]));
                [t0, t1]
            })
            .collect();
        let mut links: HashMap<i64, (i64, i64)> = HashMap::new();
        for (&p, &r) in m.tl_pub.iter().zip(&m.tl_run) {
            let e = links.entry(r / block).or_insert((p, p));
            *e = (e.0.min(p), e.1.max(p));
        }
        Ok(BlockRows { pubs, runs, links: links.into_iter().map(|(k, (a, b))| (k, a, b)).collect() })
    }

    fn slice(&mut self, r: Ranges, xp: &[i64], xr: &[i64]) -> Result<Model, String> {
        self.reads.push("slice");
        let m = &self.m;
        let runs: Vec<i64> = (r.c..r.d).chain(xr.iter().copied()).collect();
        let pubs: Vec<i64> = (r.a..r.b).chain(xp.iter().copied()).collect();
        let local = |ids: &[i64], g: i64| ids.iter().position(|&x| x == g).map_or(NONE, |i| i as i64);
        let mut s = m.statics();
        s.run_cb = runs.iter().map(|&g| m.run_cb[g as usize]).collect();
        s.run_start = runs.iter().map(|&g| m.run_start[g as usize]).collect();
        s.run_end = runs.iter().map(|&g| m.run_end[g as usize]).collect();
        s.pb_publisher = pubs.iter().map(|&g| m.pb_publisher[g as usize]).collect();
        s.pb_run = pubs.iter().map(|&g| local(&runs, m.pb_run[g as usize])).collect();
        s.pb_ts = pubs.iter().map(|&g| m.pb_ts[g as usize]).collect();
        let mut pairs: Vec<(i64, i64)> =
            m.tl_pub.iter().zip(&m.tl_run).map(|(&p, &r)| (local(&pubs, p), local(&runs, r))).filter(|&(p, r)| p >= 0 && r >= 0).collect();
        pairs.sort_unstable();
        (s.tl_pub, s.tl_run) = pairs.into_iter().unzip();
        Ok(s)
    }

    fn latest_runs(&mut self, ids: (i64, i64), since: i64, upto: i64) -> Result<Vec<(i64, i64, i64)>, String> {
        self.reads.push("latest_runs");
        Ok(latest(ids, since, upto, &self.m.run_cb, &self.m.run_start))
    }

    fn latest_publications(&mut self, ids: (i64, i64), since: i64, upto: i64) -> Result<Vec<(i64, i64, i64)>, String> {
        self.reads.push("latest_publications");
        Ok(latest(ids, since, upto, &self.m.pb_publisher, &self.m.pb_ts))
    }

    fn linked_publications(&mut self, runs: &[i64]) -> Result<Vec<i64>, String> {
        self.reads.push("linked_publications");
        Ok(self.m.tl_pub.iter().zip(&self.m.tl_run).filter(|(_, r)| runs.contains(r)).map(|(&p, _)| p).collect())
    }

    fn runs_of(&mut self, pubs: &[i64]) -> Result<Vec<i64>, String> {
        self.reads.push("runs_of");
        Ok(pubs.iter().map(|&p| self.m.pb_run[p as usize]).filter(|&r| r >= 0).collect())
    }

    fn run_before(&mut self, callback: i64, t: i64) -> Result<i64, String> {
        self.reads.push("run_before");
        let m = &self.m;
        let done =
            (0..m.run_start.len()).filter(|&r| m.run_cb[r] == callback && m.run_start[r] < t && m.run_end[r] >= 0 && m.run_end[r] <= t);
        Ok(done.max_by_key(|&r| (m.run_start[r], r)).map_or(NONE, |r| r as i64))
    }

    fn newest_before(&mut self, topic: &str, t: i64) -> Result<i64, String> {
        self.reads.push("newest_before");
        let m = &self.m;
        let on = (0..m.pb_ts.len()).filter(|&p| m.topic_name(m.pub_topic[m.pb_publisher[p] as usize]) == topic && m.pb_ts[p] < t);
        Ok(on.max_by_key(|&p| (m.pb_ts[p], -m.pb_publisher[p], p)).map_or(NONE, |p| p as i64))
    }
}

#[test]
fn blocks_choose_the_end_of_a_slice_by_count_and_its_ranges_by_reference() {
    // Blocks of 2 ids. Publication blocks (times; runs): b0 [10, 20] (runs 0..1), b1
    // [30, 40] (2..2), b2 [50, 60] (outside runs), b3 [70, 80] (3..3); run blocks
    // (starts): r0 [5, 15], r1 [25, 45]; links: runs of r0 fed publications 0..1, of r1 1..5.
    let rows = BlockRows {
        pubs: vec![
            [Some(10), Some(20), Some(0), Some(1)],
            [Some(30), Some(40), Some(2), Some(2)],
            [Some(50), Some(60), None, None],
            [Some(70), Some(80), Some(3), Some(3)],
        ],
        runs: vec![[Some(5), Some(15)], [Some(25), Some(45)]],
        links: vec![(0, 0, 1), (1, 1, 5)],
    };
    let bl = Blocks::new(&rows, 2, 8, 4);
    assert_eq!((bl.t_min, bl.t_max), (5, 80), "the earliest run start, the latest publication");
    // From 30: b1 is the first block ending at or after it; 3 publications are 2 blocks,
    // so the slice ends where b3 starts (70); 4 publications the same; 5 are 3 blocks,
    // past the last: the end of the trace.
    assert_eq!(bl.end_of_slice(30, 3), 70);
    assert_eq!(bl.end_of_slice(30, 4), 70);
    assert_eq!(bl.end_of_slice(30, 5), MAX);
    // From 5, one publication (at least one block): b1's start, 30.
    assert_eq!(bl.end_of_slice(5, 1), 30);
    // [30, 60): publications from b1 (id 2), but the runs from r1 on were fed by
    // publication 1: a = 1; runs from r1 (id 2) and b1's publications were made in run
    // 2: c = 2. Up to b2 (b = 6), r1 (d = 4); runs 2..4 were fed up to publication 5
    // (b stays 6); publications 1..6 were made up to run 3 (d stays 4).
    assert_eq!(bl.ranges(30, 60), Ranges { a: 1, b: 6, c: 2, d: 4 });
    // [MIN, MAX): everything.
    assert_eq!(bl.ranges(MIN, MAX), Ranges { a: 0, b: 8, c: 0, d: 4 });
}

#[test]
fn anchors_give_horizons_and_the_instances_before_a_slice() {
    // chain(): runs r0 cb0 100, r1 cb1 200, r2 cb2 300, r3 cb3 200, r4 cb4 250;
    // publications p0 pu0 120, p1 pu1 240, p2 pu2 330, p3 pu3 265.
    let mut src = ModelSource::new(chain().model());
    let mut an = Anchors::new(5, 4);
    let all = Ranges { a: 0, b: 4, c: 0, d: 5 };
    an.fold(&mut src, all, 250).unwrap();
    // Before 250: cb0's r0 (100), cb1's r1 (200), cb3's r3 (200); pu0's p0 (120), pu1's p1 (240).
    assert_eq!(an.horizons(250), (vec![100, 200, MIN, 200, MIN], vec![120, 240, MIN, MIN], vec![0, 1, 3], vec![0, 1]));
    // A slice searched again from 150: what ran at 200 and 240 is not known before 150.
    assert_eq!(an.horizons(150), (vec![100, 150, MIN, 150, MIN], vec![120, 150, MIN, MIN], vec![0], vec![0]));
    // Folding up to a time already folded reads nothing.
    let n = src.reads.len();
    an.fold(&mut src, all, 200).unwrap();
    assert_eq!(src.reads.len(), n);
    // Up to 400: r2 (300), r4 (250); p2 (330), p3 (265).
    an.fold(&mut src, all, 400).unwrap();
    assert_eq!(an.horizons(400), (vec![100, 200, 300, 200, 250], vec![120, 240, 330, 265], vec![0, 1, 2, 3, 4], vec![0, 1, 2, 3]));
}

#[test]
fn history_answers_needs_and_maps_them_into_the_ids_of_a_slice() {
    // chain(): links p0 -> r1, p1 -> r2, p0 -> r3; p3 was published in r4; topics
    // in byte order: /out, /x, /y, /z.
    let m = chain().model();
    assert_eq!(m.topics, ["/out", "/x", "/y", "/z"]);
    let mut src = ModelSource::new(m.clone());
    let mut h = History::new(m.topics.clone());
    let needs = [Need::Node(Kind::Run, 1), Need::Node(Kind::Pub, 3), Need::RunBefore(2, 340), Need::NewestBefore(1, 200)];
    assert!(h.answer(&mut src, &needs).unwrap());
    // r1 whole: its linked p0; p3 whole: its run r4; cb2's only run (300..350) has not
    // ended by 340: none; the newest /x before 200: p0 (120).
    assert_eq!(src.reads, ["linked_publications", "runs_of", "run_before", "newest_before"]);
    assert!(!h.answer(&mut src, &needs).unwrap(), "nothing new the second time");
    assert_eq!(src.reads.len(), 4, "and nothing read again");
    // A slice of publications 2..3 then p0, p3, runs 3..5 then r1: r1 is 2 (after the
    // 2 of the range), r4 is 1; p0 is 1 (after the 1 of the range), p3 is 2.
    let mut w = Window::all();
    h.answers(Ranges { a: 2, b: 3, c: 3, d: 5 }, &[1], &[0, 3], &mut w);
    assert_eq!(w.runs_before, HashMap::from([((2, 340), NONE)]));
    assert_eq!(w.newest_before, HashMap::from([((1, 200), 1)]));
    assert_eq!(w.complete, [(Kind::Run, 2), (Kind::Pub, 2)].into_iter().collect());
}

/// 40 periods of 100 ns: node a's timer runs at 100k (10 ns) and publishes /x at
/// 100k + 5 (p2k); node b's subscription receives it at 100k + 20 (10 ns) and
/// publishes /y at 100k + 25 (p2k+1). Runs r2k, r2k+1 likewise.
fn periods() -> Spec {
    let mut s = Spec {
        nodes: vec![("a", Some("/")), ("b", Some("/"))],
        subs: vec![(1, "/x")],
        pubs: vec![(0, "/x"), (1, "/y")],
        cbs: vec![("timer", -1, 0), ("subscription", 0, 1)],
        ..Spec::default()
    };
    for k in 0..40 {
        s.runs.extend([(0, 100 * k, 100 * k + 10), (1, 100 * k + 20, 100 * k + 30)]);
        s.pbs.extend([(0, 2 * k, 100 * k + 5), (1, 2 * k + 1, 100 * k + 25)]);
        s.links.push((2 * k, 2 * k + 1));
    }
    s
}

/// One slice handed to a search: (lo, hi, out_from, out_to, ids, answered runs before).
type Seen = (i64, i64, (i64, i64), i64, IdMap, Vec<((i64, i64), i64)>);

/// A search that records what it is handed and says, at given calls, that the flows
/// reach beyond the slice.
struct Recorder {
    seen: Vec<Seen>,
    beyond: HashMap<usize, Beyond>,
}

impl SliceSearch for Recorder {
    type Error = String;

    fn run(&mut self, m: &Model, ids: IdMap, w: Window) -> Result<Option<Beyond>, String> {
        assert_eq!(m.pb_ts.len() as i64, ids.pub_n + ids.pub_extra.len() as i64, "the slice holds what its ids say");
        let mut answered: Vec<_> = w.runs_before.clone().into_iter().collect();
        answered.sort_unstable();
        self.seen.push((w.lo, w.hi, w.out_from, w.out_to, ids, answered));
        Ok(self.beyond.get(&self.seen.len()).cloned())
    }
}

#[test]
fn slices_follow_each_other_by_count_with_their_anchors() {
    // periods(), 16 publications a slice (blocks of 16: publication block i holds
    // times 800i + 5 ..= 800i + 725, runs 16i..16i+15; run block i starts 800i ..=
    // 800i + 720, fed by publications 16i..16i+14), reach 50.
    let mut src = ModelSource::new(periods().model());
    let mut rec = Recorder { seen: Vec::new(), beyond: HashMap::new() };
    let st = over_slices(&mut src, &mut rec, 16, 50, None).unwrap();
    // Outputs up to where the next block starts: 805, 1605, 2405, 3205, then the end.
    let spans: Vec<_> = rec.seen.iter().map(|s| (s.0, s.1, s.2, s.3)).collect();
    assert_eq!(
        spans,
        [
            (MIN, 855, (MIN, MIN), 805),
            (755, 1655, (805, MIN), 1605),
            (1555, 2455, (1605, MIN), 2405),
            (2355, 3255, (2405, MIN), 3205),
            (3155, MAX, (3205, MIN), MAX),
        ]
    );
    // The first slice: everything before 855 (blocks 0..1: publications and runs 0..32),
    // and what runs 0..47 were fed (up to publication 46) and publications 0..47 were
    // made in (up to run 47).
    assert_eq!(rec.seen[0].4, IdMap { pub_base: 0, pub_n: 47, pub_extra: vec![], run_base: 0, run_n: 48, run_extra: vec![] });
    // The second, [755, 1655): blocks 1..2 (16..48), fed up to publication 62, made up
    // to run 63; before 755 the latest runs are r14 (700) and r15 (720), the latest
    // publications p14 (705) and p15 (725), with p14 linked to r15: extra ones.
    assert_eq!(rec.seen[1].4, IdMap { pub_base: 16, pub_n: 47, pub_extra: vec![14, 15], run_base: 16, run_n: 48, run_extra: vec![14, 15] });
    assert_eq!(
        st,
        SliceStats {
            count: 5,
            restarts: 0,
            answered_from_database: 0,
            reach_ns: 50,
            peak_instances: 99,
            publications_per_slice: 16,
            rest_from: None
        }
    );
}

#[test]
fn an_output_beyond_its_slice_is_searched_again_answered_then_reaching_further() {
    // As above; the second slice says its output p17 (825) needs the latest completed
    // run of the timer before 800 (r14, 700..710), and the next slice says so again.
    let mut src = ModelSource::new(periods().model());
    let at = (825, 17);
    let beyond = HashMap::from([(2, (at, vec![Need::RunBefore(0, 800)])), (3, (at, vec![Need::RunBefore(0, 800)]))]);
    let mut rec = Recorder { seen: Vec::new(), beyond };
    let mut h = History::new(src.m.topics.clone());
    let st = over_slices(&mut src, &mut rec, 16, 50, Some(&mut h)).unwrap();
    let spans: Vec<_> = rec.seen.iter().map(|s| (s.0, s.1, s.2, s.3)).collect();
    // The third slice starts at the output (its id 17 is 1 in the slice, publications
    // from 16), reach 50, with the answer: r14, the slice's run 48 (after its 48 runs
    // 16..64; the extra runs are r14, r15). The answer brings nothing new the second
    // time: the fourth slice reaches 100.
    assert_eq!(spans[2], (775, 1655, (825, 1), 1605));
    assert_eq!(rec.seen[2].4.run_extra, [14, 15]);
    assert_eq!(rec.seen[2].5, [((0, 800), 48)]);
    assert_eq!(spans[3], (725, 1705, (825, 17), 1605), "from publication 0: the reach takes in block 0");
    assert_eq!(spans[4], (1505, 2505, (1605, MIN), 2405));
    assert_eq!((st.count, st.restarts, st.answered_from_database, st.reach_ns), (7, 2, 1, 100));
    assert_eq!(src.reads.iter().filter(|r| **r == "run_before").count(), 1);
}

#[test]
fn a_search_over_the_whole_model_cannot_reach_beyond_it() {
    let mut src = ModelSource::new(chain().model());
    let mut rec = Recorder { seen: Vec::new(), beyond: HashMap::from([(1, ((120, 0), Vec::new()))]) };
    assert!(matches!(over_slices(&mut src, &mut rec, 1000, 50, None), Err(SliceError::BeyondWholeModel)));
}

/// `SliceSearch` of a data-flow search whose chunks are kept.
struct Keep<'a> {
    search: &'a mut SlicedFlowSearch,
    tables: &'a mut Vec<roscope_model::table::Table>,
}

impl SliceSearch for Keep<'_> {
    type Error = String;

    fn run(&mut self, m: &Model, ids: IdMap, w: Window) -> Result<Option<Beyond>, String> {
        let tables = &mut *self.tables;
        self.search.run(m, ids, w, &mut |t| {
            tables.push(t);
            true
        })
    }

    fn stopped(&self) -> bool {
        self.search.stopped()
    }
}

#[test]
fn a_sliced_search_finds_each_period_s_flow_once() {
    // Every /y message's flow starts at the timer's run of its period (r2k, 100k),
    // publishes p2k and ends at p2k+1 (100k + 25): 25 ns, whichever slice holds it;
    // slices of 16 publications reaching 1 ns start (804, 1604, ...) after the
    // timer's run of their first output's flow (800, 1600, ...).
    let m = periods().model();
    let o = opts(&m, &["/x"], &["/y"], Implicit::Auto);
    let mut search = SlicedFlowSearch::new(&m, o, false, 1000);
    let mut tables = Vec::new();
    let mut src = ModelSource::new(m);
    let st = over_slices(&mut src, &mut Keep { search: &mut search, tables: &mut tables }, 16, 1, None).unwrap();
    assert!(st.count >= 5, "{:?}", st);
    let (_, res) = search.finish(&mut |t| {
        tables.push(t);
        true
    });
    assert_eq!(res.flows, 40);
    let flows = tables.iter().filter(|t| t.name == "data_flows");
    let (mut outs, mut ins, mut runs, mut lat) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for t in flows {
        outs.extend(ints(t, "output_publication_id"));
        ins.extend(ints(t, "input_publication_id"));
        runs.extend(ints(t, "first_run_id"));
        lat.extend(ints(t, "latency_ns"));
    }
    assert_eq!(outs, (0..40).map(|k| 2 * k + 1).collect::<Vec<_>>());
    assert_eq!(ins, (0..40).map(|k| 2 * k).collect::<Vec<_>>());
    assert_eq!(runs, ins, "r2k published p2k");
    assert_eq!(lat, vec![25; 40]);
}
