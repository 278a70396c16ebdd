//! `roscope stats` of a model held in memory, without a database: the parts
//! that python/roscope/stats.py reads with SQL from the model's tables and views
//! (python/roscope/database.py: `callbacks_info`, `publications_info`,
//! `links_info`, `topics`, `subscription_drops`), computed here from the same
//! tables with the same meaning: joins on ids, NULL as SQL treats it, groups
//! with a NULL key kept apart. A short recording's `roscope stats` then needs
//! neither DuckDB nor pyarrow (python/roscope/stats_core.py).
//!
//! The numbers are DuckDB's, to the bit where its arithmetic is fixed:
//! `avg` of integers (a sum divided in x86's extended precision, then rounded
//! to a double), `quantile_cont` (linear between two ranks, fused
//! multiply-add), `stddev_samp` (Welford's update, in the order of the rows).

use rustc_hash::{FxHashMap, FxHashSet};

use crate::schema::node_name;
use crate::table::{Col, Data, Table};
use crate::Model;

/// The standard statistics of a set of integer durations (ns): count, min,
/// mean, std (sample), p50, p90, p99, max; `None` where SQL gives NULL.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Describe {
    pub count: u64,
    pub min: Option<i64>,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<i64>,
}

/// Welford's running mean and squared deviations, updated as DuckDB's
/// `stddev_samp` is.
#[derive(Default, Clone, Copy)]
struct Welford {
    n: u64,
    mean: f64,
    dsq: f64,
}

impl Welford {
    fn push(&mut self, x: f64) {
        self.n += 1;
        let diff = (x - self.mean) / self.n as f64;
        let new_mean = self.mean + diff;
        self.dsq += (x - new_mean) * (x - self.mean);
        self.mean = new_mean;
    }

    fn std(&self) -> Option<f64> {
        (self.n > 1).then(|| (self.dsq / (self.n - 1) as f64).sqrt())
    }
}

/// `avg` of integers as DuckDB computes it: the exact sum (a HUGEINT) as an x87
/// extended double (64-bit significand: exact below 2^64), divided by the count
/// in that precision (round to nearest even), then rounded to a double (again
/// to nearest even): two roundings, emulated here in integers.
pub fn duckdb_avg(sum: i128, n: u64) -> f64 {
    if n == 0 {
        return f64::NAN;
    }
    let a = sum.unsigned_abs();
    if sum == 0 {
        return 0.0;
    }
    if a >= 1u128 << 64 {
        // Not exact in an extended double either: beyond any trace's durations.
        return sum as f64 / n as f64;
    }
    let n128 = n as u128;
    // q = a * 2^k / n with 2^63 <= q < 2^64, rounded to nearest even.
    let bits = |x: u128| 128 - x.leading_zeros() as i32;
    let mut k = 64 - bits(a) + bits(n128) - 1;
    let (mut q, mut r);
    loop {
        let num = if k >= 0 { a << k } else { a >> (-k) };
        q = num / n128;
        r = num % n128;
        if k < 0 && (a & ((1u128 << (-k)) - 1)) != 0 {
            // cannot happen for a < 2^64, n >= 1 (k >= 0 there); kept exact anyway
            r |= 1;
        }
        if q >= 1u128 << 64 {
            k -= 1;
        } else if q < 1u128 << 63 {
            k += 1;
        } else {
            break;
        }
    }
    let twice = r * 2;
    if twice > n128 || (twice == n128 && q & 1 == 1) {
        q += 1;
        if q == 1u128 << 64 {
            q >>= 1;
            k -= 1;
        }
    }
    // to 53 bits, nearest even
    let low = q & 0x7ff;
    let mut m = q >> 11;
    if low > 0x400 || (low == 0x400 && m & 1 == 1) {
        m += 1;
    }
    let v = m as f64 * 2f64.powi(11 - k);
    if sum < 0 {
        -v
    } else {
        v
    }
}

/// `quantile_cont(x, f)` of sorted values.
fn quantile(sorted: &[i64], f: f64) -> f64 {
    let p = (sorted.len() - 1) as f64 * f;
    let (lo, hi) = (p.floor(), p.ceil());
    if lo == hi {
        return sorted[lo as usize] as f64;
    }
    let d = p - lo;
    let (a, b) = (sorted[lo as usize] as f64, sorted[hi as usize] as f64);
    a.mul_add(1.0 - d, b * d)
}

impl Describe {
    /// The statistics of `xs` (in the order the rows come: `std` depends on it).
    pub fn of(mut xs: Vec<i64>) -> Describe {
        if xs.is_empty() {
            return Describe::default();
        }
        let mut w = Welford::default();
        let mut sum: i128 = 0;
        for &x in &xs {
            w.push(x as f64);
            sum += x as i128;
        }
        xs.sort_unstable();
        Describe {
            count: xs.len() as u64,
            min: xs.first().copied(),
            mean: Some(duckdb_avg(sum, xs.len() as u64)),
            std: w.std(),
            p50: Some(quantile(&xs, 0.5)),
            p90: Some(quantile(&xs, 0.9)),
            p99: Some(quantile(&xs, 0.99)),
            max: xs.last().copied(),
        }
    }
}

/// A column of one of the model's tables, read by row.
#[derive(Clone, Copy)]
struct C<'a>(Option<&'a Col>);

impl<'a> C<'a> {
    fn valid(&self, i: usize) -> bool {
        match self.0 {
            Some(c) => !c.any_null || c.valid[i] != 0,
            None => false,
        }
    }

    fn int(&self, i: usize) -> Option<i64> {
        if !self.valid(i) {
            return None;
        }
        match &self.0?.data {
            Data::I64(v) => Some(v[i]),
            Data::U64(v) => Some(v[i] as i64),
            _ => None,
        }
    }

    /// An unsigned column (handles): `int`'s bits, as the column holds them.
    fn uint(&self, i: usize) -> Option<u64> {
        self.int(i).map(|v| v as u64)
    }

    fn text(&self, i: usize) -> Option<&'a str> {
        if !self.valid(i) {
            return None;
        }
        match &self.0?.data {
            Data::Str(b, o) => std::str::from_utf8(&b[o[i] as usize..o[i + 1] as usize]).ok(),
            _ => None,
        }
    }
}

/// One of the model's tables (empty when the model has none of that name).
struct T<'a> {
    t: Option<&'a Table>,
}

impl<'a> T<'a> {
    fn of(m: &'a Model, name: &str) -> Self {
        T { t: m.table(name) }
    }

    fn rows(&self) -> usize {
        self.t.map_or(0, |t| t.rows)
    }

    fn col(&self, name: &str) -> C<'a> {
        C(self.t.and_then(|t| t.cols.iter().find(|c| c.name == name)))
    }

    /// Row of each id (the first column named `id`): the rows a join on it finds.
    fn index(&self, id: &str) -> Index {
        let c = self.col(id);
        let first = if self.rows() > 0 { c.int(0) } else { None };
        if let Some(first) = first {
            if (0..self.rows()).all(|i| c.int(i) == first.checked_add(i as i64)) {
                return Index::Offset { first, rows: self.rows() };
            }
        }
        Index::Map((0..self.rows()).filter_map(|i| c.int(i).map(|v| (v, i))).collect())
    }
}

/// The row of an id in a table (`T::index`).
enum Index {
    /// The model numbers most tables' rows: the id of row i is the first row's plus i
    /// (no map to build, and no lookup that misses the cache).
    Offset { first: i64, rows: usize },
    /// Any other ids (gaps, NULLs, another order): the last row of each.
    Map(FxHashMap<i64, usize>),
}

impl Index {
    fn row(&self, id: i64) -> Option<usize> {
        match self {
            Index::Offset { first, rows } => id.checked_sub(*first).and_then(|r| usize::try_from(r).ok()).filter(|r| r < rows),
            Index::Map(m) => m.get(&id).copied(),
        }
    }
}

/// The nodes table: full name (`node_name`) and process of each node id.
struct Nodes {
    at: FxHashMap<i64, (Option<String>, Option<i64>)>,
}

impl Nodes {
    fn of(m: &Model) -> Self {
        let t = T::of(m, "nodes");
        let (id, name, ns, proc) = (t.col("node_id"), t.col("name"), t.col("namespace"), t.col("proc_id"));
        let at = (0..t.rows()).filter_map(|i| Some((id.int(i)?, (node_name(name.text(i), ns.text(i)), proc.int(i))))).collect();
        Nodes { at }
    }

    fn name(&self, id: Option<i64>) -> Option<String> {
        self.at.get(&id?).and_then(|n| n.0.clone())
    }
}

/// `callbacks_info`'s columns that `roscope stats` reads.
#[derive(Clone, Debug)]
pub struct CallbackInfo {
    pub hostname: Option<String>,
    pub pid: Option<i64>,
    pub procname: Option<String>,
    pub node: Option<String>,
    pub callback_id: Option<i64>,
    pub handle: Option<u64>,
    pub symbol: Option<String>,
    pub kind: Option<String>,
    pub topic: Option<String>,
    pub timer_period_ns: Option<i64>,
}

/// A group's statistics with its key and the counts `stats.py` adds to them.
#[derive(Clone, Debug)]
pub struct Group<K> {
    pub key: K,
    pub d: Describe,
    /// rows of the group (count(*)), beside `d.count` (count(x))
    pub rows: u64,
    /// sum of x (durations: busy time), None when no x
    pub sum: Option<i128>,
    /// rows with heuristic = 1 (deliveries)
    pub heuristic: u64,
    /// rows whose x was negative, left out of `d` (latencies: `Gather::push_latency`)
    pub negative: u64,
}

impl<K> Group<K> {
    /// The same group under the key `f` makes of its key.
    fn map_key<J>(self, f: impl FnOnce(K) -> J) -> Group<J> {
        Group { key: f(self.key), d: self.d, rows: self.rows, sum: self.sum, heuristic: self.heuristic, negative: self.negative }
    }
}

/// A topic name borrowed from the model, as the owned key of a part of `Stats`.
fn owned(t: Option<&str>) -> Option<String> {
    t.map(str::to_owned)
}

/// Per callback: the mean and sample deviation of its timer's periods.
#[derive(Clone, Debug)]
pub struct Period {
    pub callback_id: Option<i64>,
    pub mean: f64,
    pub jitter: Option<f64>,
}

/// Per topic, the counts of one part of `stats.topics`.
#[derive(Clone, Debug, Default)]
pub struct TopicCounts {
    pub publishers: u64,
    pub subscriptions: u64,
}

/// A topic's publications in time (their earliest layer's time): how many have
/// a time, the first and the last, and the mean and sample deviation of the
/// periods between consecutive ones (all its publishers' together, in time
/// order): what its rate is computed from (python/roscope/stats.py `topic_rate`).
#[derive(Clone, Debug)]
pub struct TopicTimes {
    pub topic: String,
    pub timed: u64,
    pub first: Option<i64>,
    pub last: Option<i64>,
    pub period_mean: Option<f64>,
    pub period_jitter: Option<f64>,
}

/// A service's row, as `stats.services` gives it.
#[derive(Clone, Debug)]
pub struct ServiceRow {
    pub service: String,
    pub server_node: Option<String>,
    pub calls: u64,
    pub clients: u64,
    pub answered: u64,
    pub server: Describe,
    pub rtt: Describe,
    /// calls whose server time, or round trip, came out negative: left out of
    /// `server` and `rtt` (an event emitted after the call it reports)
    pub server_negative: u64,
    pub rtt_negative: u64,
    pub heuristic_links: u64,
}

/// A node's row, as `stats.nodes` gives it (without its CPU share).
#[derive(Clone, Debug)]
pub struct NodeRow {
    pub node: String,
    pub hostname: Option<String>,
    pub pid: Option<i64>,
    pub callbacks: u64,
    pub runs: u64,
    pub busy_ns: i128,
    pub publications: u64,
}

/// Everything `roscope stats` reads from the database, by part.
#[derive(Debug, Default)]
pub struct Stats {
    /// each trace's path and domain (`ust`, `kernel`)
    pub traces: Vec<(Option<String>, Option<String>)>,
    /// min(first_ts), max(last_ts) of the threads
    pub span: (Option<i64>, Option<i64>),
    /// the summary's counts, in `stats._SUMMARY_COUNTS`' order
    pub counts: Vec<(&'static str, i128)>,
    /// links per method, by method (NULL last)
    pub links_by_method: Vec<(Option<String>, u64)>,
    pub callback_info: Vec<CallbackInfo>,
    /// per callback: its complete runs' durations (rows: runs, sum: busy time)
    pub durations: Vec<Group<Option<i64>>>,
    pub periods: Vec<Period>,
    /// the `topics` view
    pub topics: Vec<(String, TopicCounts)>,
    /// per topic: publications, and those without a link
    pub publications: Vec<(String, u64, u64)>,
    /// per topic: its publications' times, for its rate (python/roscope/stats.py `topic_rate`)
    pub publication_times: Vec<TopicTimes>,
    /// per topic: takes (taken), and those without a link
    pub takes: Vec<(String, u64, u64)>,
    /// per topic (NULL kept): `subscription_drops`' dropped, summed
    pub drops: Vec<(Option<String>, i128)>,
    /// per topic: delivery latency (publication to callback start)
    pub latencies: Vec<Group<Option<String>>>,
    /// per topic: transport latency (publication to take)
    pub transports: Vec<Group<Option<String>>>,
    pub services: Vec<ServiceRow>,
    pub nodes: Vec<NodeRow>,
}

/// A value per key (a GROUP BY's groups), in the order the keys first come.
struct Groups<K, V> {
    groups: Vec<(K, V)>,
    at: FxHashMap<K, usize>,
}

impl<K: std::hash::Hash + Eq + Clone, V: Default> Groups<K, V> {
    fn new() -> Self {
        Groups { groups: Vec::new(), at: FxHashMap::default() }
    }

    /// The value of `k`'s group, made when `k` first comes (the key is cloned then only).
    fn entry(&mut self, k: &K) -> &mut V {
        let i = match self.at.get(k) {
            Some(&i) => i,
            None => {
                self.groups.push((k.clone(), V::default()));
                self.at.insert(k.clone(), self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        &mut self.groups[i].1
    }
}

/// A group's x values (not NULL), its rows and its rows with heuristic = 1.
#[derive(Default)]
struct Xs {
    xs: Vec<i64>,
    rows: u64,
    heuristic: u64,
    negative: u64,
}

/// Values of x per group, with the group's row counts.
struct Gather<K>(Groups<K, Xs>);

impl<K: std::hash::Hash + Eq + Clone> Gather<K> {
    fn new() -> Self {
        Gather(Groups::new())
    }

    /// A row of `k`'s group (with its x, if any); the group, for what else the row counts.
    fn push(&mut self, k: &K, x: Option<i64>, heuristic: bool) -> &mut Xs {
        let g = self.0.entry(k);
        g.rows += 1;
        g.heuristic += heuristic as u64;
        if let Some(x) = x {
            g.xs.push(x);
        }
        g
    }

    /// A latency: a negative one is a row, counted as `negative`, without an x (it
    /// measures no time: an event emitted after what it reports).
    fn push_latency(&mut self, k: &K, x: Option<i64>, heuristic: bool) {
        self.push(k, x.filter(|&x| x >= 0), heuristic).negative += x.is_some_and(|x| x < 0) as u64;
    }

    fn finish(self) -> Vec<Group<K>> {
        let groups = self.0.groups.into_iter();
        groups
            .map(|(key, g)| {
                let sum = (!g.xs.is_empty()).then(|| g.xs.iter().map(|&x| x as i128).sum());
                Group { key, d: Describe::of(g.xs), rows: g.rows, sum, heuristic: g.heuristic, negative: g.negative }
            })
            .collect()
    }
}

/// The publications with their topic (their publisher's name), publisher, node
/// and earliest layer's time: `publications_info`.
struct Pubs<'a> {
    n: usize,
    id: C<'a>,
    publisher: C<'a>,
    layers: [C<'a>; 4],
    /// publisher id -> (name, node id)
    publishers: FxHashMap<i64, (Option<&'a str>, Option<i64>)>,
    at: Index,
}

impl<'a> Pubs<'a> {
    fn of(m: &'a Model) -> Self {
        let t = T::of(m, "publications");
        let pu = T::of(m, "publishers");
        let (pid, pname, pnode) = (pu.col("publisher_id"), pu.col("name"), pu.col("node_id"));
        let publishers = (0..pu.rows()).filter_map(|i| Some((pid.int(i)?, (pname.text(i), pnode.int(i))))).collect();
        Pubs {
            n: t.rows(),
            id: t.col("publication_id"),
            publisher: t.col("publisher_id"),
            layers: [t.col("rclcpp_ts"), t.col("rcl_ts"), t.col("rmw_ts"), t.col("ts")],
            publishers,
            at: t.index("publication_id"),
        }
    }

    fn publisher(&self, i: usize) -> Option<&(Option<&'a str>, Option<i64>)> {
        self.publishers.get(&self.publisher.int(i)?)
    }

    fn topic(&self, i: usize) -> Option<&'a str> {
        self.publisher(i).and_then(|p| p.0)
    }

    fn node_id(&self, i: usize) -> Option<i64> {
        self.publisher(i).and_then(|p| p.1)
    }

    fn publish_ts(&self, i: usize) -> Option<i64> {
        self.layers.iter().find_map(|c| c.int(i))
    }
}

/// A window of the trace, [start, end) in ns of its clock (`roscope stats --window`,
/// `roscope watch`): a record is in it when its time is (a run's start, a publication's
/// earliest layer time, a take's time; a delivery and a transport by its publication),
/// as python/roscope/stats.py's `_within` says in SQL. None: the whole model.
pub type Window = Option<(i64, i64)>;

/// Whether a time is in the window (a NULL time is in no window, as SQL's comparison).
fn within(w: Window, t: Option<i64>) -> bool {
    match w {
        None => true,
        Some((lo, hi)) => t.is_some_and(|t| lo <= t && t < hi),
    }
}

/// The statistics' parts of model `m`.
pub fn stats(m: &Model) -> Stats {
    stats_within(m, None)
}

/// The statistics' parts of model `m`, those of the callbacks and topics over the window
/// `w` ([start, end), `roscope stats --window`: its summary, services and nodes are the whole
/// model's, and it counts no drops); None: the whole model.
pub fn stats_within(m: &Model, w: Window) -> Stats {
    let mut s = Stats::default();
    let runs = T::of(m, "callback_runs");
    let complete = complete_runs(&runs, None);
    summary(m, &mut s, &runs, &complete);
    let nodes = Nodes::of(m);
    let windowed = w.map(|_| complete_runs(&runs, w));
    let counted = windowed.as_deref().unwrap_or(&complete);
    let (pubs, links, takes, take_at) = per_callback_and_topic(m, &mut s, &nodes, &runs, counted, w);
    if w.is_none() {
        s.drops = drops(&pubs, &links, &takes, &take_at);
    }
    s.services = services(m, &nodes);
    s.nodes = node_rows(m, &nodes, &s.callback_info, &runs, &complete, &pubs);
    s
}

/// The parts of `stats.callbacks` and `stats.topics` over the window [start, end) of
/// model `m` (`roscope watch`'s windows, `roscope stats --window`'s definitions): per
/// callback, its complete runs that start in it; per topic, its publications, takes,
/// deliveries and transports in it (unmatched ones against every link `m` holds); the
/// topics and callbacks `m` knows. `span` is the window; the summary, drops, services
/// and nodes are left empty (a window has none).
pub fn window_stats(m: &Model, start: i64, end: i64) -> Stats {
    let mut s = Stats { span: (Some(start), Some(end)), ..Stats::default() };
    let runs = T::of(m, "callback_runs");
    let w = Some((start, end));
    let complete = complete_runs(&runs, w);
    let nodes = Nodes::of(m);
    per_callback_and_topic(m, &mut s, &nodes, &runs, &complete, w);
    s
}

/// The rows of the complete runs (their end seen) that start in `w`.
fn complete_runs(runs: &T, w: Window) -> Vec<usize> {
    let (run_end, run_start) = (runs.col("end_ts"), runs.col("start_ts"));
    (0..runs.rows()).filter(|&i| run_end.valid(i) && within(w, run_start.int(i))).collect()
}

/// The callbacks' and topics' parts (`complete`: the runs that count, their window's
/// already): callback info, durations and periods, topic names, per-topic counts and
/// latencies of the records in `w`. Returns the publications, links and takes read, and
/// the takes' index by id.
fn per_callback_and_topic<'a>(
    m: &'a Model,
    s: &mut Stats,
    nodes: &Nodes,
    runs: &T,
    complete: &[usize],
    w: Window,
) -> (Pubs<'a>, T<'a>, T<'a>, Index) {
    s.callback_info = callback_info(m, nodes);
    durations_and_periods(s, runs, complete);
    s.topics = topic_names(m);
    let pubs = Pubs::of(m);
    let (links, takes) = (T::of(m, "links"), T::of(m, "takes"));
    counts_per_topic(m, s, &pubs, &links, &takes, w);
    let take_at = takes.index("take_id");
    latencies(s, &pubs, &links, &takes, &take_at, runs, w);
    (pubs, links, takes, take_at)
}

/// The trace's span: min(first_ts), max(last_ts) of the threads.
pub fn span(m: &Model) -> (Option<i64>, Option<i64>) {
    let threads = T::of(m, "threads");
    let (f, l) = (threads.col("first_ts"), threads.col("last_ts"));
    ((0..threads.rows()).filter_map(|i| f.int(i)).min(), (0..threads.rows()).filter_map(|i| l.int(i)).max())
}

/// The span, the traces, the summary's counts and the links per method.
fn summary(m: &Model, s: &mut Stats, runs: &T, complete: &[usize]) {
    s.span = span(m);
    let traces = T::of(m, "traces");
    let (path, domain) = (traces.col("path"), traces.col("domain"));
    s.traces = (0..traces.rows()).map(|i| (path.text(i).map(str::to_owned), domain.text(i).map(str::to_owned))).collect();
    let sum_of = |c: C| -> i128 { (0..traces.rows()).filter_map(|i| c.int(i)).map(|x| x as i128).sum() };
    let (takes, links) = (T::of(m, "takes"), T::of(m, "links"));
    let taken = takes.col("taken");
    s.counts = vec![
        ("processes", T::of(m, "processes").rows() as i128),
        ("nodes", T::of(m, "nodes").rows() as i128),
        ("callbacks", T::of(m, "callbacks").rows() as i128),
        ("callback_runs", complete.len() as i128),
        ("incomplete_runs", (runs.rows() - complete.len()) as i128),
        ("publications", T::of(m, "publications").rows() as i128),
        ("takes", (0..takes.rows()).filter(|&i| taken.int(i) == Some(1)).count() as i128),
        ("links", links.rows() as i128),
        ("events_discarded", sum_of(traces.col("events_discarded"))),
        ("packets_lost", sum_of(traces.col("packets_lost"))),
    ];
    let method = links.col("method");
    let mut methods: FxHashMap<Option<&str>, u64> = FxHashMap::default();
    for i in 0..links.rows() {
        *methods.entry(method.text(i)).or_default() += 1;
    }
    let mut methods: Vec<(Option<String>, u64)> = methods.into_iter().map(|(k, n)| (k.map(str::to_owned), n)).collect();
    methods.sort_by(|a, b| match (&a.0, &b.0) {
        (Some(x), Some(y)) => x.as_bytes().cmp(y.as_bytes()),
        (x, y) => x.is_none().cmp(&y.is_none()),
    });
    s.links_by_method = methods;
}

/// Per callback, its complete runs' durations and the periods between their starts.
fn durations_and_periods(s: &mut Stats, runs: &T, complete: &[usize]) {
    let (run_cb, run_start, run_dur) = (runs.col("callback_id"), runs.col("start_ts"), runs.col("duration_ns"));
    let mut dur = Gather::new();
    let mut starts: Groups<Option<i64>, Vec<i64>> = Groups::new();
    for &i in complete {
        let cb = run_cb.int(i);
        dur.push(&cb, run_dur.int(i), false);
        let ts = starts.entry(&cb);
        // lag() over start_ts, NULLs last: a run without a start ends the sequence
        if let Some(t) = run_start.int(i) {
            ts.push(t);
        }
    }
    s.durations = dur.finish();
    for (cb, mut ts) in starts.groups {
        if ts.len() < 2 {
            continue;
        }
        ts.sort_unstable();
        let mut w = Welford::default();
        let mut sum: i128 = 0;
        for p in ts.windows(2).map(|p| p[1] - p[0]) {
            w.push(p as f64);
            sum += p as i128;
        }
        s.periods.push(Period { callback_id: cb, mean: duckdb_avg(sum, w.n), jitter: w.std() });
    }
}

/// The `topics` view: every name a publisher or a subscription has, with their counts.
fn topic_names(m: &Model) -> Vec<(String, TopicCounts)> {
    let mut topics: Groups<&str, TopicCounts> = Groups::new();
    for (table, is_pub) in [("publishers", true), ("subscriptions", false)] {
        let t = T::of(m, table);
        let name = t.col("name");
        for n in (0..t.rows()).filter_map(|i| name.text(i)) {
            let c = topics.entry(&n);
            if is_pub {
                c.publishers += 1;
            } else {
                c.subscriptions += 1;
            }
        }
    }
    topics.groups.into_iter().map(|(t, c)| (t.to_owned(), c)).collect()
}

/// Per topic: publications and those no link names; takes (taken) and those no link names;
/// those in `w` (a publication by its publish time, a take by its time).
fn counts_per_topic(m: &Model, s: &mut Stats, pubs: &Pubs, links: &T, takes: &T, w: Window) {
    let (l_pub, l_take) = (links.col("publication_id"), links.col("take_id"));
    let linked_pubs: FxHashSet<i64> = (0..links.rows()).filter_map(|i| l_pub.int(i)).collect();
    let linked_takes: FxHashSet<i64> = (0..links.rows()).filter_map(|i| l_take.int(i)).collect();
    let mut per: Groups<&str, (u64, u64)> = Groups::new();
    let mut times: Groups<&str, Vec<i64>> = Groups::new();
    for i in 0..pubs.n {
        if let Some(t) = pubs.topic(i).filter(|_| within(w, pubs.publish_ts(i))) {
            let c = per.entry(&t);
            c.0 += 1;
            c.1 += !pubs.id.int(i).is_some_and(|id| linked_pubs.contains(&id)) as u64;
            if let Some(ts) = pubs.publish_ts(i) {
                times.entry(&t).push(ts);
            }
        }
    }
    s.publications = per.groups.into_iter().map(|(t, (n, u))| (t.to_owned(), n, u)).collect();
    s.publication_times = times.groups.into_iter().map(|(topic, ts)| topic_times(topic.to_owned(), ts)).collect();

    let subs = T::of(m, "subscriptions");
    let sub_name: FxHashMap<i64, Option<&str>> = {
        let (id, name) = (subs.col("subscription_id"), subs.col("name"));
        (0..subs.rows()).filter_map(|i| Some((id.int(i)?, name.text(i)))).collect()
    };
    let (take_id, take_sub, taken, take_ts) = (takes.col("take_id"), takes.col("subscription_id"), takes.col("taken"), takes.col("ts"));
    let mut per: Groups<&str, (u64, u64)> = Groups::new();
    for i in 0..takes.rows() {
        if taken.int(i) != Some(1) || !within(w, take_ts.int(i)) {
            continue;
        }
        // JOIN subscriptions, WHERE s.name IS NOT NULL
        let Some(Some(name)) = take_sub.int(i).and_then(|s| sub_name.get(&s)) else { continue };
        let c = per.entry(name);
        c.0 += 1;
        c.1 += !take_id.int(i).is_some_and(|id| linked_takes.contains(&id)) as u64;
    }
    s.takes = per.groups.into_iter().map(|(t, (n, u))| (t.to_owned(), n, u)).collect();
}

/// A topic's `TopicTimes` from its publications' times.
fn topic_times(topic: String, mut ts: Vec<i64>) -> TopicTimes {
    ts.sort_unstable();
    let mut w = Welford::default();
    let mut sum: i128 = 0;
    for p in ts.windows(2).map(|p| p[1] - p[0]) {
        w.push(p as f64);
        sum += p as i128;
    }
    TopicTimes {
        topic,
        timed: ts.len() as u64,
        first: ts.first().copied(),
        last: ts.last().copied(),
        period_mean: (w.n > 0).then(|| duckdb_avg(sum, w.n)),
        period_jitter: w.std(),
    }
}

/// `links_info`: the links whose publication exists, with its take and run; per topic,
/// publication to callback start (delivery) and publication to take (transport), of the
/// publications in `w`.
fn latencies(s: &mut Stats, pubs: &Pubs, links: &T, takes: &T, take_at: &Index, runs: &T, w: Window) {
    let (l_pub, l_take, l_run, l_heur) = (links.col("publication_id"), links.col("take_id"), links.col("run_id"), links.col("heuristic"));
    let (take_ts, run_start) = (takes.col("ts"), runs.col("start_ts"));
    let run_at = runs.index("run_id");
    let mut lat = Gather::new();
    let mut trans = Gather::new();
    for i in 0..links.rows() {
        let Some(p) = l_pub.int(i).and_then(|id| pubs.at.row(id)) else { continue };
        let topic = pubs.topic(p);
        let publish = pubs.publish_ts(p);
        if !within(w, publish) {
            continue;
        }
        let start = l_run.int(i).and_then(|r| run_at.row(r)).and_then(|r| run_start.int(r));
        if let Some(start) = start {
            lat.push_latency(&topic, publish.map(|p| start - p), l_heur.int(i) == Some(1));
        }
        let take = l_take.int(i).and_then(|t| take_at.row(t)).and_then(|t| take_ts.int(t));
        if let Some(take) = take {
            trans.push_latency(&topic, publish.map(|p| take - p), false);
        }
    }
    s.latencies = lat.finish().into_iter().map(|g| g.map_key(owned)).collect();
    s.transports = trans.finish().into_iter().map(|g| g.map_key(owned)).collect();
}

fn callback_info<'a>(m: &'a Model, nodes: &Nodes) -> Vec<CallbackInfo> {
    let cbs = T::of(m, "callbacks");
    let procs = T::of(m, "processes");
    let hosts = T::of(m, "hosts");
    let proc_at = procs.index("proc_id");
    let host_at = hosts.index("host_id");
    let (sub_t, srv_t, cli_t, tim_t) = (T::of(m, "subscriptions"), T::of(m, "services"), T::of(m, "clients"), T::of(m, "timers"));
    let (sub_at, srv_at, cli_at, tim_at) =
        (sub_t.index("subscription_id"), srv_t.index("service_id"), cli_t.index("client_id"), tim_t.index("timer_id"));
    let (sub_name, srv_name, cli_name, tim_period) = (sub_t.col("name"), srv_t.col("name"), cli_t.col("name"), tim_t.col("period_ns"));
    let (p_pid, p_name, p_host) = (procs.col("pid"), procs.col("procname"), procs.col("host_id"));
    let h_name = hosts.col("hostname");
    let (c_id, c_proc, c_handle, c_symbol, c_kind, c_owner, c_node) = (
        cbs.col("callback_id"),
        cbs.col("proc_id"),
        cbs.col("handle"),
        cbs.col("symbol"),
        cbs.col("kind"),
        cbs.col("owner_id"),
        cbs.col("node_id"),
    );
    let mut out = Vec::with_capacity(cbs.rows());
    for i in 0..cbs.rows() {
        // JOIN processes, JOIN hosts: a callback without either is left out
        let Some(p) = c_proc.int(i).and_then(|x| proc_at.row(x)) else { continue };
        let Some(h) = p_host.int(p).and_then(|x| host_at.row(x)) else { continue };
        let kind = c_kind.text(i);
        let own = c_owner.int(i);
        let name_in = |name: C<'a>, at: &Index| own.and_then(|o| at.row(o)).and_then(|r| name.text(r));
        let topic = match kind {
            Some("subscription") => name_in(sub_name, &sub_at),
            Some("service") => name_in(srv_name, &srv_at),
            Some("client") => name_in(cli_name, &cli_at),
            _ => None,
        };
        let period = match kind {
            Some("timer") => own.and_then(|o| tim_at.row(o)).and_then(|r| tim_period.int(r)),
            _ => None,
        };
        out.push(CallbackInfo {
            hostname: h_name.text(h).map(str::to_owned),
            pid: p_pid.int(p),
            procname: p_name.text(p).map(str::to_owned),
            node: nodes.name(c_node.int(i)),
            callback_id: c_id.int(i),
            handle: c_handle.uint(i),
            symbol: c_symbol.text(i).map(str::to_owned),
            kind: kind.map(str::to_owned),
            topic: topic.map(str::to_owned),
            timer_period_ns: period,
        });
    }
    out
}

/// `subscription_drops`, summed per topic: per subscription and publisher it
/// receives from by exact links, the publisher's messages between the first
/// and the last it received that it never received.
fn drops(pubs: &Pubs, links: &T, takes: &T, take_at: &Index) -> Vec<(Option<String>, i128)> {
    let (l_pub, l_take, l_heur) = (links.col("publication_id"), links.col("take_id"), links.col("heuristic"));
    let take_sub = takes.col("subscription_id");
    // per (subscription, publisher): the first and last publish time of its exact links
    let mut pairs: Groups<(i64, i64), (Option<i64>, Option<i64>)> = Groups::new();
    let mut delivered: FxHashSet<(i64, i64)> = FxHashSet::default();
    for i in 0..links.rows() {
        let Some(t) = l_take.int(i).and_then(|x| take_at.row(x)) else { continue };
        let sub = take_sub.int(t);
        if let (Some(p), Some(s)) = (l_pub.int(i), sub) {
            delivered.insert((p, s));
        }
        if l_heur.int(i) != Some(0) {
            continue;
        }
        let Some(p) = l_pub.int(i).and_then(|x| pubs.at.row(x)) else { continue };
        let (Some(sub), Some(publisher)) = (sub, pubs.publisher.int(p)) else { continue };
        let b = pairs.entry(&(sub, publisher));
        if let Some(ts) = pubs.publish_ts(p) {
            b.0 = Some(b.0.map_or(ts, |x| x.min(ts)));
            b.1 = Some(b.1.map_or(ts, |x| x.max(ts)));
        }
    }
    // each publisher's publications: (publish time, id, row)
    let mut by_publisher: FxHashMap<i64, Vec<(i64, Option<i64>, usize)>> = FxHashMap::default();
    for i in 0..pubs.n {
        if let (Some(p), Some(ts)) = (pubs.publisher.int(i), pubs.publish_ts(i)) {
            by_publisher.entry(p).or_default().push((ts, pubs.id.int(i), i));
        }
    }
    let mut per: Groups<Option<&str>, i128> = Groups::new();
    for ((sub, publisher), (first, last)) in &pairs.groups {
        let (Some(first), Some(last)) = (first, last) else { continue };
        // grouped by (subscription, topic): each candidate's topic is its publication's
        for &(ts, id, row) in by_publisher.get(publisher).map(Vec::as_slice).unwrap_or(&[]) {
            if ts < *first || ts > *last {
                continue;
            }
            *per.entry(&pubs.topic(row)) += !id.is_some_and(|id| delivered.contains(&(id, *sub))) as i128;
        }
    }
    per.groups.into_iter().map(|(t, n)| (owned(t), n)).collect()
}

fn services(m: &Model, nodes: &Nodes) -> Vec<ServiceRow> {
    let calls = T::of(m, "service_calls");
    let (srv, cli) = (T::of(m, "services"), T::of(m, "clients"));
    let (srv_at, cli_at) = (srv.index("service_id"), cli.index("client_id"));
    let (pb, tk) = (T::of(m, "publications"), T::of(m, "takes"));
    let (pb_at, tk_at) = (pb.index("publication_id"), tk.index("take_id"));
    let (pb_ts, tk_ts) = (pb.col("ts"), tk.col("ts"));
    let at_ts = |at: &Index, ts: C, id: Option<i64>| id.and_then(|x| at.row(x)).and_then(|r| ts.int(r));
    let (c_cli, c_srv, c_method) = (calls.col("client_id"), calls.col("service_id"), calls.col("method"));
    let (rq_p, rq_t, rs_p, rs_t) = (
        calls.col("request_publication_id"),
        calls.col("request_take_id"),
        calls.col("response_publication_id"),
        calls.col("response_take_id"),
    );
    #[derive(Default)]
    struct Acc {
        server_node: Option<String>,
        calls: u64,
        clients: FxHashSet<i64>,
        answered: u64,
        server: Vec<i64>,
        rtt: Vec<i64>,
        server_negative: u64,
        rtt_negative: u64,
        heuristic: u64,
    }
    let (srv_name, srv_node, cli_name) = (srv.col("name"), srv.col("node_id"), cli.col("name"));
    let mut g: Groups<&str, Acc> = Groups::new();
    for i in 0..calls.rows() {
        let s = c_srv.int(i).and_then(|x| srv_at.row(x));
        let c = c_cli.int(i).and_then(|x| cli_at.row(x));
        let name = s.and_then(|r| srv_name.text(r)).or_else(|| c.and_then(|r| cli_name.text(r)));
        let Some(name) = name else { continue };
        let node = s.and_then(|r| srv_node.int(r)).and_then(|n| nodes.name(Some(n)));
        let a = g.entry(&name);
        if a.server_node.is_none() {
            a.server_node = node; // any_value: the first that is not NULL
        }
        a.calls += 1;
        if let Some(cid) = c_cli.int(i) {
            a.clients.insert(cid);
        }
        let request = at_ts(&pb_at, pb_ts, rq_p.int(i));
        let take = at_ts(&tk_at, tk_ts, rq_t.int(i));
        let response = at_ts(&pb_at, pb_ts, rs_p.int(i));
        let response_take = at_ts(&tk_at, tk_ts, rs_t.int(i));
        a.answered += response_take.is_some() as u64;
        // a negative time measures nothing (an event emitted after the call it reports)
        if let (Some(r), Some(t)) = (response, take) {
            if r >= t {
                a.server.push(r - t);
            } else {
                a.server_negative += 1;
            }
        }
        if let (Some(r), Some(t)) = (response_take, request) {
            if r >= t {
                a.rtt.push(r - t);
            } else {
                a.rtt_negative += 1;
            }
        }
        a.heuristic += (c_method.text(i) == Some("service_sequence_nearest")) as u64;
    }
    let mut out: Vec<ServiceRow> = g
        .groups
        .into_iter()
        .map(|(service, a)| ServiceRow {
            service: service.to_owned(),
            server_node: a.server_node,
            calls: a.calls,
            clients: a.clients.len() as u64,
            answered: a.answered,
            server: Describe::of(a.server),
            rtt: Describe::of(a.rtt),
            server_negative: a.server_negative,
            rtt_negative: a.rtt_negative,
            heuristic_links: a.heuristic,
        })
        .collect();
    out.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.service.as_bytes().cmp(b.service.as_bytes())));
    out
}

fn node_rows(m: &Model, nodes: &Nodes, info: &[CallbackInfo], runs: &T, complete: &[usize], pubs: &Pubs) -> Vec<NodeRow> {
    let (run_cb, run_id, run_dur) = (runs.col("callback_id"), runs.col("run_id"), runs.col("duration_ns"));
    // per callback: its complete runs (with an id) and their durations
    let mut per_cb: FxHashMap<i64, (u64, Option<i128>)> = FxHashMap::default();
    for &i in complete {
        let Some(cb) = run_cb.int(i) else { continue };
        let e = per_cb.entry(cb).or_insert((0, None));
        e.0 += run_id.valid(i) as u64;
        if let Some(d) = run_dur.int(i) {
            e.1 = Some(e.1.unwrap_or(0) + d as i128);
        }
    }
    type Key = (String, Option<String>, Option<i64>);
    // per (node, hostname, pid): its callbacks, their complete runs and busy time
    let mut g: Groups<Key, (FxHashSet<i64>, u64, i128)> = Groups::new();
    for c in info {
        let Some(node) = &c.node else { continue };
        let a = g.entry(&(node.clone(), c.hostname.clone(), c.pid));
        if let Some(id) = c.callback_id {
            a.0.insert(id);
            if let Some(&(n, busy)) = per_cb.get(&id) {
                a.1 += n;
                a.2 += busy.unwrap_or(0);
            }
        }
    }
    // publications per (node name, pid): publications_info JOIN nodes JOIN processes
    let procs = T::of(m, "processes");
    let proc_pid: FxHashMap<i64, Option<i64>> = {
        let (id, pid) = (procs.col("proc_id"), procs.col("pid"));
        (0..procs.rows()).filter_map(|i| Some((id.int(i)?, pid.int(i)))).collect()
    };
    let mut pb: FxHashMap<(&str, Option<i64>), u64> = FxHashMap::default();
    for i in 0..pubs.n {
        let Some(n) = pubs.node_id(i).and_then(|n| nodes.at.get(&n)) else { continue };
        let Some(pid) = n.1.and_then(|p| proc_pid.get(&p)) else { continue };
        // a NULL node name joins no node row of `cb`
        if let Some(name) = &n.0 {
            *pb.entry((name.as_str(), *pid)).or_default() += 1;
        }
    }
    let mut out: Vec<NodeRow> = g
        .groups
        .into_iter()
        .map(|((node, hostname, pid), (cbs, runs, busy))| {
            // USING (node, pid): a NULL pid joins nothing
            let publications = pid.and_then(|p| pb.get(&(node.as_str(), Some(p)))).copied().unwrap_or(0);
            NodeRow { node, hostname, pid, callbacks: cbs.len() as u64, runs, busy_ns: busy, publications }
        })
        .collect();
    out.sort_by(|a, b| {
        b.busy_ns.cmp(&a.busy_ns).then_with(|| a.node.as_bytes().cmp(b.node.as_bytes())).then_with(|| match (a.pid, b.pid) {
            (Some(x), Some(y)) => x.cmp(&y),
            (x, y) => x.is_none().cmp(&y.is_none()),
        })
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avg_rounds_twice_as_x87_does() {
        assert_eq!(duckdb_avg(10, 4), 2.5);
        assert_eq!(duckdb_avg(-10, 4), -2.5);
        assert_eq!(duckdb_avg(1, 3), 1.0 / 3.0);
        assert_eq!(duckdb_avg(0, 3), 0.0);
        assert_eq!(duckdb_avg(7, 1), 7.0);
        // an exact quotient needs no rounding
        assert_eq!(duckdb_avg(1 << 62, 2), (1u64 << 61) as f64);
    }

    #[test]
    fn a_topics_times_are_its_publications_in_time_order() {
        // two publishers interleaved, out of order: 100, 200, 250, 400
        let t = topic_times("/t".into(), vec![400, 100, 250, 200]);
        assert_eq!((t.timed, t.first, t.last), (4, Some(100), Some(400)));
        // periods 100, 50, 150: mean 100, sample deviation 50
        assert_eq!(t.period_mean, Some(100.0));
        assert!((t.period_jitter.unwrap() - 50.0).abs() < 1e-12);
        let one = topic_times("/t".into(), vec![7]);
        assert_eq!((one.timed, one.first, one.last, one.period_mean, one.period_jitter), (1, Some(7), Some(7), None, None));
    }

    #[test]
    fn quantiles_interpolate_linearly() {
        let d = Describe::of(vec![4, 1, 3, 2]);
        assert_eq!(d.count, 4);
        assert_eq!((d.min, d.max), (Some(1), Some(4)));
        assert_eq!(d.p50, Some(2.5));
        assert_eq!(d.mean, Some(2.5));
        assert!((d.std.unwrap() - 1.2909944487358056).abs() < 1e-15);
        assert_eq!(Describe::of(vec![5]).std, None);
    }
}
