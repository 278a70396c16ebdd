//! Reproducers of crashes, hangs and wrong results found by fuzzing
//! (crates/ctf/fuzz) and by reading the decoder, kept so they stay fixed.
//! Inputs are in tests/data/ (see make_data.py there; `stream-*` files use
//! the stream fuzz target's format: one selector byte, then the stream file).

mod common;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use roscope_ctf::{json, metadata, TraceSet};

fn data(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {}", p.display(), e))
}

const FUZZ_METADATA: &[&str] = &["ros2-pingpong", "ros1-kernel", "ros1-ust"];

/// Runs `f` on a thread with a 2 MiB stack (what a Python thread or a
/// rayon worker gets) and fails if it panics or takes longer than `secs`.
fn bounded<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .unwrap();
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("did not finish within {} s", secs),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("panicked (see above)"),
    }
}

/// Reads a directory the way `roscope dump` does; returns the JSON lines
/// and the warnings.
fn dump_all(dir: PathBuf) -> (Vec<String>, Vec<String>) {
    bounded(20, move || {
        let mut set = TraceSet::open(&[&dir]).unwrap_or_else(|e| panic!("{}", e));
        let mut lines = Vec::new();
        let mut buf = Vec::new();
        while let Some(i) = set.next() {
            buf.clear();
            json::write_event(&mut buf, &set, &set.streams[i]);
            lines.push(String::from_utf8_lossy(&buf).trim_end().to_string());
            assert!(lines.len() < 1_000_000, "endless events");
        }
        (lines, set.all_warnings().iter().map(|w| w.to_string()).collect())
    })
}

/// A stream fuzz input: the selected real metadata plus the stream file.
fn stream_input(name: &str) -> (TempDir, PathBuf) {
    let input = data(name);
    let dir = TempDir::new("regr");
    let md_name = FUZZ_METADATA[input[0] as usize % FUZZ_METADATA.len()];
    let md = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/metadata").join(md_name)).unwrap();
    dir.write("metadata", &md);
    let file = dir.write("chan_0", &input[1..]);
    (dir, file)
}

fn parse_metadata_file(name: &'static str) -> Result<(), String> {
    bounded(20, move || {
        let text = String::from_utf8(data(name)).unwrap();
        metadata::parse(&text, name).map(|_| ()).map_err(|e| e.to_string())
    })
}

#[test]
fn text_sequence_length_overflowing_the_position_is_reported() {
    // Kernel lttng_logger event, __msg_length = 0x1FFF_FFFF_FFFF_FFF0: 8 times
    // it plus the position overflowed 64 bits, the bounds check passed, and
    // json::text_at sliced past the file (panic). The first event is fine
    // (babeltrace2: `_msg_length = 2, msg = "hi"` at cycle 134217733). That
    // time is after the packet's timestamp_end (2000; begin 1000, and the
    // event's 27-bit timestamp 5 wraps to 2^27 + 5): a damaged time, which
    // is reported and replaced by the previous time known, the packet's begin.
    let (dir, file) = stream_input("stream-text-length-overflow.bin");
    let (lines, warnings) = dump_all(dir.path().to_path_buf());
    assert_eq!(lines.len(), 1, "{:?}", lines);
    assert_eq!(json_member(&lines[0], "payload"), r#"{"_msg_length":2,"msg":"hi"}"#);
    assert!(lines[0].starts_with(r#"{"ts":1000,"#), "{}", lines[0]);
    let time = format!("{}: at byte 84: event time 134217733 ns is after its packet's end (2000 ns)", file.display());
    assert!(warnings.iter().any(|w| w.starts_with(&time)), "{:?}", warnings);
    // The second event starts at 84 (header + context) + 4 + 8 + 2 = 98.
    let prefix = format!("{}: at byte 98: ", file.display());
    assert!(warnings.iter().any(|w| w.starts_with(&prefix)), "{:?}", warnings);
}

#[test]
fn packet_size_near_2_pow_64_is_read_like_a_truncated_packet() {
    // Second packet (at byte 98) declares content and packet sizes of
    // 0xFFFF_FFFF_FFFF_FF00 bits: packet start + size overflowed 64 bits
    // (panic with overflow checks; a bogus "content smaller than header"
    // error and the packet's event lost without them).
    let (dir, file) = stream_input("stream-packet-size-overflow.bin");
    let (lines, warnings) = dump_all(dir.path().to_path_buf());
    let payloads: Vec<String> = lines.iter().map(|l| json_member(l, "payload")).collect();
    assert_eq!(payloads, vec![r#"{"_msg_length":2,"msg":"hi"}"#, r#"{"_msg_length":3,"msg":"abc"}"#]);
    let prefix = format!("{}: at byte 98: ", file.display());
    assert!(warnings.iter().any(|w| w.starts_with(&prefix)), "{:?}", warnings);
}

#[test]
fn events_of_zero_bits_do_not_loop_forever() {
    // No packet header, no event header, empty payload: every event is 0
    // bits long, and the reader produced events forever from a 4-byte file.
    let dir = TempDir::new("zero");
    dir.write("metadata", &data("zero-size-event.metadata"));
    let file = dir.write("chan_0", b"\x01\x02\x03\x04");
    let (lines, warnings) = dump_all(dir.path().to_path_buf());
    assert!(lines.len() <= 4, "{} events from 4 bytes", lines.len());
    let prefix = format!("{}: at byte ", file.display());
    assert!(warnings.iter().any(|w| w.starts_with(&prefix)), "{:?}", warnings);
}

#[test]
fn nested_arrays_of_empty_structures_are_bounded() {
    // struct { } a[10^7][10^7]: no bits, no tape values, but 10^14 loop
    // iterations per event.
    let dir = TempDir::new("emptyarr");
    dir.write("metadata", &data("empty-struct-arrays.metadata"));
    let file = dir.write("chan_0", &[0u8; 4]);
    let (lines, warnings) = dump_all(dir.path().to_path_buf());
    assert!(lines.is_empty(), "{:?}", lines);
    let prefix = format!("{}: at byte 0: ", file.display());
    assert!(warnings.iter().any(|w| w.starts_with(&prefix)), "{:?}", warnings);
}

#[test]
fn exponentially_large_types_are_rejected() {
    // 60 aliases, each two copies of the previous: 2^60 integers.
    let r = parse_metadata_file("exponential-alias.metadata");
    let e = r.expect_err("a type of 2^60 fields cannot be accepted");
    assert!(e.starts_with("exponential-alias.metadata:"), "{}", e);
}

#[test]
fn implicit_enum_value_after_the_largest_integer() {
    // `A = 2^127 - 1, B`: B's implicit value 2^127 overflowed i128.
    let r = parse_metadata_file("enum-implicit-overflow.metadata");
    // Either answer is fine (the value does not fit the 8-bit container
    // anyway), as long as it is an answer.
    if let Err(e) = r {
        assert!(e.starts_with("enum-implicit-overflow.metadata:"), "{}", e);
    }
}

#[test]
fn deeply_nested_structures_are_an_error_not_a_stack_overflow() {
    let e = parse_metadata_file("deep-structs.metadata").expect_err("5000 nested structs");
    assert!(e.starts_with("deep-structs.metadata:"), "{}", e);
}

#[test]
fn deeply_nested_arrays_are_an_error_not_a_stack_overflow() {
    let e = parse_metadata_file("deep-arrays.metadata").expect_err("5000 array dimensions");
    assert!(e.starts_with("deep-arrays.metadata:"), "{}", e);
}

#[test]
fn absurd_packet_sequence_numbers_do_not_overflow_the_lost_packet_count() {
    // Sequence numbers 0, 2^63, 0, 2^63, 0, 2^63, u64::MAX, 3: three gaps of
    // 2^63 - 1 packets overflowed the sum (wrapped to a small, wrong count;
    // panic with overflow checks), and u64::MAX + 1 overflowed.
    let dir = TempDir::new("seqabsurd");
    dir.write(
        "metadata",
        std_metadata("le", r#"event { id = 0; name = "e"; stream_id = 0; fields := struct { uint8_t x; }; };"#).as_bytes(),
    );
    let mut file = Vec::new();
    for (k, seq) in [0u64, 1 << 63, 0, 1 << 63, 0, 1 << 63, u64::MAX, 3].iter().enumerate() {
        let mut pk = Pkt::new(false);
        pk.seq = *seq;
        pk.ts_begin = 10 * k as u64;
        pk.ts_end = 10 * k as u64 + 5;
        file.extend(pk.build(&ev(false, 0, 10 * k as u64 + 1, &[k as u8])));
    }
    dir.write("chan_0", &file);
    let d = bounded(20, {
        let p = dir.path().to_path_buf();
        move || dump(&p)
    });
    assert_eq!(d.lines.len(), 8);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    // At least 3 * (2^63 - 1) packets are missing: more than a u64 holds.
    assert_eq!(d.loss[0].packets_lost, u64::MAX);
}

#[test]
fn nested_small_arrays_are_not_unrolled_without_bound() {
    // x[32][32][32][32][32][32][32]: the flat-program compiler unrolled every
    // array of at most 32 elements, 32^7 operations (6 GiB, then abort).
    let dir = TempDir::new("unroll");
    let events = String::from_utf8(data("nested-small-arrays.tsdl")).unwrap();
    dir.write("metadata", std_metadata("le", &events).as_bytes());
    let bytes: Vec<u8> = (0u8..24).collect();
    let mut evs = ev(false, 0, 1, &bytes);
    evs.extend(ev(false, 1, 2, &[0u8; 8])); // far too short for 32^7 bytes
    let file = dir.write("chan_0", &Pkt::new(false).build(&evs));
    let (lines, warnings) = dump_all(dir.path().to_path_buf());
    assert_eq!(lines.len(), 1);
    assert_eq!(
        json_member(&lines[0], "payload"),
        r#"{"x":[[[0,1,2,3],[4,5,6,7],[8,9,10,11]],[[12,13,14,15],[16,17,18,19],[20,21,22,23]]]}"#
    );
    // The second event starts at 56 + 9 + 24 = 89.
    let prefix = format!("{}: at byte 89: ", file.display());
    assert!(warnings.len() == 1 && warnings[0].starts_with(&prefix), "{:?}", warnings);
}
