//! Clock synchronization between hosts from the trace itself (the message-flow
//! paper, after Trace Compass's convex-hull method): a message is never received
//! before it is sent.
//!
//! For a host B against a reference host A, look for the line `t_A = f(t_B)` that
//! maps B's clock onto A's. A message A -> B sent at `s_A` and received at `r_B`
//! says `f(r_B) >= s_A`: the point `(r_B, s_A)` lies on or below the line. A
//! message B -> A sent at `s_B` and received at `r_A` says `r_A >= f(s_B)`: the
//! point `(s_B, r_A)` lies on or above it. The lines between the two point sets
//! form a convex set; its lines of least and greatest slope pass through a vertex
//! of the upper hull of the first set and one of the lower hull of the second. The
//! estimate is their bisector; half their distance over the trace's time span
//! bounds the error. With messages in one direction only, only the offset can be
//! estimated (slope 1, the tightest constraint, as if the fastest message took no
//! time), and the error is bounded on one side only.

/// A linear map of one host's clock onto the reference host's clock:
/// `t_ref = y0 + slope * (t - x0)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockMap {
    pub slope: f64,
    pub x0: f64,
    pub y0: f64,
}

impl ClockMap {
    pub fn apply(&self, t: u64) -> u64 {
        if self.slope == 1.0 {
            // An offset alone, in integers: exact however far apart the clocks' origins are.
            let v = t as i128 + (self.y0 - self.x0).round() as i128;
            return v.clamp(0, u64::MAX as i128) as u64;
        }
        let v = self.y0 + self.slope * (t as f64 - self.x0);
        if v <= 0.0 {
            0
        } else {
            v.round() as u64
        }
    }

    /// The offset `t_ref - t` at time `t`.
    pub fn offset_at(&self, t: u64) -> f64 {
        self.y0 + self.slope * (t as f64 - self.x0) - t as f64
    }
}

/// How a host's clock map was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMethod {
    /// Messages in both directions: offset and drift (convex hulls).
    ConvexHull,
    /// Messages from the reference host only: offset, the host's clock is at
    /// least this far behind (receptions after sendings).
    OffsetLowerBound,
    /// Messages to the reference host only: offset, bounded from above.
    OffsetUpperBound,
    /// No estimate from messages (`--no-sync`, or none fits): the traces'
    /// metadata clock offsets, each trace's anchor to the Unix epoch taken when
    /// it was recorded, so as good as the hosts' own wall clocks (NTP, PTP).
    MetadataOffset,
}

impl SyncMethod {
    pub fn name(self) -> &'static str {
        match self {
            SyncMethod::ConvexHull => "convex_hull",
            SyncMethod::OffsetLowerBound => "offset_lower_bound",
            SyncMethod::OffsetUpperBound => "offset_upper_bound",
            SyncMethod::MetadataOffset => "metadata_offset",
        }
    }
}

/// The estimate for one host.
#[derive(Clone, Debug)]
pub struct Sync {
    pub map: ClockMap,
    pub method: SyncMethod,
    /// Half the distance between the extreme feasible lines over the span of
    /// the messages (ns); `None` when only one side is bounded.
    pub bound_ns: Option<f64>,
}

/// The map of a clock whose origin is `offset_ns` after the Unix epoch onto
/// one whose origin is `reference_offset_ns` after it (the traces' metadata
/// clock offsets): `t_ref = t + offset_ns - reference_offset_ns`.
pub fn by_metadata(offset_ns: i64, reference_offset_ns: i64) -> Sync {
    let d = offset_ns.wrapping_sub(reference_offset_ns) as f64;
    Sync { map: ClockMap { slope: 1.0, x0: 0.0, y0: d }, method: SyncMethod::MetadataOffset, bound_ns: None }
}

/// Points `(x, y)` (x on the host's clock, y on the reference's).
type Pt = (f64, f64);
/// A line `y = m * x + c` as `(m, c)`.
type Line = (f64, f64);
/// Message pairs, raw clocks.
pub type Pairs = Vec<(u64, u64)>;

fn cross(o: Pt, a: Pt, b: Pt) -> f64 {
    (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
}

/// The upper (`upper = true`) or lower convex hull of points sorted by x.
fn hull(points: &[Pt], upper: bool) -> Vec<Pt> {
    let mut h: Vec<Pt> = Vec::new();
    for &p in points {
        while h.len() >= 2 {
            let c = cross(h[h.len() - 2], h[h.len() - 1], p);
            if (upper && c >= 0.0) || (!upper && c <= 0.0) {
                h.pop();
            } else {
                break;
            }
        }
        h.push(p);
    }
    h
}

fn centered(pairs: &[(u64, u64)], x0: f64, y0: f64) -> Vec<Pt> {
    let mut v: Vec<Pt> = pairs.iter().map(|&(x, y)| (x as f64 - x0, y as f64 - y0)).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

/// Estimates the map of a host's clock onto the reference's from `below`:
/// (reception on the host, sending on the reference) of messages reference ->
/// host, and `above`: (sending on the host, reception on the reference) of
/// messages host -> reference. `None` without messages, or when no line fits
/// (the clocks are not linear to each other over the trace).
pub fn estimate(below: &[(u64, u64)], above: &[(u64, u64)]) -> Option<Sync> {
    let all = below.iter().chain(above.iter());
    let n = (below.len() + above.len()) as f64;
    if n == 0.0 {
        return None;
    }
    let (sx, sy) = all.fold((0.0, 0.0), |(a, b), &(x, y)| (a + x as f64 / n, b + y as f64 / n));
    let (x0, y0) = (sx.round(), sy.round());
    let l = centered(below, x0, y0);
    let u = centered(above, x0, y0);
    if u.is_empty() {
        // y <= x + c for every point: the least offset that holds.
        let c = l.iter().map(|p| p.1 - p.0).fold(f64::MIN, f64::max);
        return Some(Sync { map: ClockMap { slope: 1.0, x0, y0: y0 + c }, method: SyncMethod::OffsetLowerBound, bound_ns: None });
    }
    if l.is_empty() {
        let c = u.iter().map(|p| p.1 - p.0).fold(f64::MAX, f64::min);
        return Some(Sync { map: ClockMap { slope: 1.0, x0, y0: y0 + c }, method: SyncMethod::OffsetUpperBound, bound_ns: None });
    }
    let lh = hull(&l, true);
    let uh = hull(&u, false);
    let eps = 1e-6;
    let feasible = |m: f64, c: f64| lh.iter().all(|p| p.1 <= m * p.0 + c + eps) && uh.iter().all(|p| p.1 >= m * p.0 + c - eps);
    let (mut lo, mut hi): (Option<Line>, Option<Line>) = (None, None);
    for &a in &lh {
        for &b in &uh {
            if (b.0 - a.0).abs() < 1.0 {
                continue;
            }
            let m = (b.1 - a.1) / (b.0 - a.0);
            let c = a.1 - m * a.0;
            if !feasible(m, c) {
                continue;
            }
            if lo.is_none_or(|(lm, _)| m < lm) {
                lo = Some((m, c));
            }
            if hi.is_none_or(|(hm, _)| m > hm) {
                hi = Some((m, c));
            }
        }
    }
    let ((m1, c1), (m2, c2)) = (lo?, hi?);
    let (m, c) = ((m1 + m2) / 2.0, (c1 + c2) / 2.0);
    let xs = l.iter().chain(u.iter()).map(|p| p.0);
    let (xmin, xmax) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let gap = |x: f64| ((m2 - m1) * x + (c2 - c1)).abs() / 2.0;
    Some(Sync { map: ClockMap { slope: m, x0, y0: y0 + c }, method: SyncMethod::ConvexHull, bound_ns: Some(gap(xmin).max(gap(xmax))) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages both ways between a reference and a host whose clock runs
    /// `ppm` fast and is `offset` ahead: t_host = t_ref * (1 + ppm/1e6) + offset.
    fn messages(ppm: f64, offset: f64, latency: u64, n: u64) -> (Pairs, Pairs) {
        let host = |t: u64| (t as f64 * (1.0 + ppm * 1e-6) + offset).round() as u64;
        let mut below = Vec::new();
        let mut above = Vec::new();
        for k in 0..n {
            let t = 1_000_000_000 + k * 10_000_000;
            // ref -> host: sent at t (ref), received latency later (host clock)
            below.push((host(t + latency + (k % 7) * 1000), t));
            // host -> ref: sent at t + 5 ms (host clock), received latency later (ref)
            let s = t + 5_000_000;
            above.push((host(s), s + latency + (k % 5) * 1000));
        }
        (below, above)
    }

    #[test]
    fn recovers_offset_and_drift_within_the_bound() {
        for &(ppm, offset) in &[(0.0, 0.0), (2000.0, -30e6), (-150.0, 2.5e6), (40.0, 7e9)] {
            let (below, above) = messages(ppm, offset, 50_000, 400);
            let s = estimate(&below, &above).expect("an estimate");
            assert_eq!(s.method, SyncMethod::ConvexHull);
            let truth = |t_host: f64| (t_host - offset) / (1.0 + ppm * 1e-6);
            let bound = s.bound_ns.unwrap();
            // The true map lies within the bound over the messages' span, and the
            // bound is the latency's order (messages take 50 us each way).
            for &(x, _) in below.iter().chain(above.iter()) {
                let err = (s.map.apply(x) as f64 - truth(x as f64)).abs();
                assert!(err <= bound + 1.0, "ppm {ppm} offset {offset}: error {err} > bound {bound}");
            }
            assert!(bound < 60_000.0, "bound {bound}");
            assert!((s.map.slope - 1.0 / (1.0 + ppm * 1e-6)).abs() * 1e6 < 1.0, "slope {}", s.map.slope);
        }
    }

    #[test]
    fn one_direction_gives_an_offset_with_a_one_sided_bound() {
        let (below, _) = messages(0.0, -30e6, 50_000, 100);
        let s = estimate(&below, &[]).unwrap();
        assert_eq!((s.method, s.bound_ns), (SyncMethod::OffsetLowerBound, None));
        // The fastest message (50 us) is taken as instantaneous: the map is 50 us late.
        let err = s.map.apply(below[0].0) as f64 - (below[0].0 as f64 + 30e6);
        assert!((err - -50_000.0).abs() < 2.0, "{err}");
        assert!(estimate(&[], &[]).is_none());
    }
}
