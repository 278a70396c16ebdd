"""A topic's rate (roscope.stats.topic_rate, issue 39): the one definition `stats`, `watch`,
`check`, the report and `dataset stats` show. Expected values worked out by hand; the rate
of real recordings against the nodes' own logs is tests/test_ros2_pipeline.py's."""
from __future__ import annotations

import pytest
from roscope.stats import topic_rate, topic_rows

S = 1_000_000_000


def test_over_the_topics_own_span():
    # 101 publications from 1 s to 2 s: 100 periods of 10 ms, 100 Hz, whatever the recording's length
    assert topic_rate(101, 1 * S, 2 * S) == 100.0
    assert topic_rate(2, 0, S // 4) == 4.0


def test_without_a_period():
    assert topic_rate(0, None, None) == 0.0       # nothing published
    assert topic_rate(1, 5 * S, 5 * S) is None    # one publication: no period, no rate
    assert topic_rate(3, 5 * S, 5 * S) is None    # all at one instant


def test_over_a_window_per_second_of_the_window():
    assert topic_rate(50, 3 * S, 3 * S + S // 2, window_ns=2 * S) == 25.0


def test_rows_carry_the_rate_and_its_parts():
    topics = [{"topic": "/a", "publishers": 2, "subscriptions": 0}, {"topic": "/b", "publishers": 1, "subscriptions": 0}]
    pubs = [{"topic": "/a", "publications": 11}]
    times = [{"topic": "/a", "timed_publications": 11, "first_publish_ts": 10 * S, "last_publish_ts": 12 * S,
              "period_mean_ns": 0.2 * S, "period_jitter_ns": 1000.0}]
    rows = {r["topic"]: r for r in topic_rows(topics, pubs, times, [], [], None, [], [], None)}
    assert rows["/a"]["rate_hz"] == pytest.approx(5.0)
    assert (rows["/a"]["first_publish_ts"], rows["/a"]["last_publish_ts"]) == (10 * S, 12 * S)
    assert (rows["/a"]["period_mean_ns"], rows["/a"]["period_jitter_ns"]) == (0.2 * S, 1000.0)
    assert rows["/b"]["rate_hz"] == 0.0 and rows["/b"]["period_mean_ns"] is None
    windowed = {r["topic"]: r for r in topic_rows(topics, pubs, times, [], [], None, [], [], 4 * S)}
    assert windowed["/a"]["rate_hz"] == 11 / 4
