//! Damaged streams and repeated inputs, on hand-built traces: where reading
//! resumes after a damaged packet (packet index, packet size, next header),
//! what the warnings say, how damaged times are repaired, and that a trace or
//! a stream met twice is read once.
//!
//! Layout of the standard test trace (common::std_metadata): packet header
//! {magic, stream_id} (8 bytes), context {timestamp_begin, timestamp_end,
//! content_size, packet_size, packet_seq_num, events_discarded} (48 bytes),
//! events {id: u8, timestamp: u64, x: u32} (13 bytes). Expected values below
//! are worked out by hand from those bytes.

mod common;

use common::*;
use roscope_ctf::TraceSet;

const EVENT: &str = r#"event { id = 0; name = "e"; stream_id = 0; fields := struct { uint32_t x; }; };"#;
/// Byte offsets in a packet of the standard layout.
const PACKET_SIZE_AT: usize = 32;
const TS_BEGIN_AT: usize = 8;
const EVENT_BYTES: usize = 13;

fn event(ts: u64, x: u32) -> Vec<u8> {
    ev(false, 0, ts, &x.to_le_bytes())
}

/// `n` packets of 100 bytes, packet k: begin 100k, end 100k + 90, seq k,
/// one event at 100k + 10 with x = k.
fn packets(n: usize) -> Vec<u8> {
    let mut file = Vec::new();
    for k in 0..n {
        let mut pk = Pkt::new(false);
        pk.packet_bytes = 100;
        pk.seq = k as u64;
        pk.ts_begin = 100 * k as u64;
        pk.ts_end = 100 * k as u64 + 90;
        file.extend(pk.build(&event(100 * k as u64 + 10, k as u32)));
    }
    file
}

fn put_u64(file: &mut [u8], at: usize, v: u64) {
    file[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// An LTTng packet index (CTF index 1.0: big-endian, 7 fields of 8 bytes)
/// describing `packets(n)`.
fn index(n: usize) -> Vec<u8> {
    let mut w = W::be();
    w.u32(0xC1F1_DCC1).u32(1).u32(0).u32(56);
    for k in 0..n as u64 {
        w.u64(100 * k).u64(800).u64(8 * (STD_HEADER_BYTES + EVENT_BYTES) as u64);
        w.u64(100 * k).u64(100 * k + 90).u64(0).u64(0);
    }
    w.take()
}

fn trace(file: &[u8]) -> (TempDir, String) {
    let dir = TempDir::new("damage");
    dir.write("metadata", std_metadata("le", EVENT).as_bytes());
    let p = dir.write("chan_0", file);
    (dir, p.display().to_string())
}

fn xs(d: &Dump) -> Vec<String> {
    d.payloads()
}

fn expect_xs(n: &[u32]) -> Vec<String> {
    n.iter().map(|k| format!(r#"{{"x":{}}}"#, k)).collect()
}

#[test]
fn packet_size_not_a_multiple_of_8_is_replaced_by_the_index() {
    let mut file = packets(3);
    put_u64(&mut file, 100 + PACKET_SIZE_AT, 801);
    let (dir, path) = trace(&file);
    std::fs::create_dir(dir.path().join("index")).unwrap();
    dir.write("index/chan_0.idx", &index(3));
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2]));
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 100: packet header disagrees with the packet index {}/index/chan_0.idx: packet_size 801 (index: 800); the \
             index's values are used",
            path,
            dir.path().display()
        )]
    );
}

#[test]
fn packet_size_not_a_multiple_of_8_without_index_reads_the_content_and_finds_the_next_packet() {
    let mut file = packets(3);
    put_u64(&mut file, 100 + PACKET_SIZE_AT, 801);
    let (dir, path) = trace(&file);
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2]));
    // content: 56 + 13 bytes = 552 bits.
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 100: packet size 801 bits is invalid (content 552 bits): the packet's content is read and the next packet is \
             searched for after it",
            path
        )]
    );
}

#[test]
fn packet_size_leading_into_the_middle_of_a_packet_is_found_damaged() {
    // Packet 0 says 150 bytes: byte 150 is inside packet 1, which starts at
    // byte 100, after packet 0's content (69 bytes).
    let mut file = packets(3);
    put_u64(&mut file, PACKET_SIZE_AT, 1200);
    let (dir, path) = trace(&file);
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2]));
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 0: packet size 150 bytes leads to byte 150, where no packet of this stream starts, but one starts at byte \
             100: the packet size is damaged",
            path
        )]
    );
}

#[test]
fn a_damaged_magic_number_alone_is_repaired_by_the_index() {
    let mut file = packets(3);
    file[100] ^= 0xFF;
    let (dir, path) = trace(&file);
    std::fs::create_dir(dir.path().join("index")).unwrap();
    dir.write("index/chan_0.idx", &index(3));
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2]));
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 100: packet magic number 0xc1fc1f3e is damaged, but its sizes agree with the packet index: the packet is read",
            path
        )]
    );
}

#[test]
fn damaged_packet_headers_are_skipped_by_the_index() {
    // The headers and contexts of packets 1 and 2 zeroed (magic, sizes): no
    // packet there; reading resumes at packet 3, where the index says.
    let mut file = packets(4);
    file[100..100 + STD_HEADER_BYTES].fill(0);
    file[200..200 + STD_HEADER_BYTES].fill(0);
    let (dir, path) = trace(&file);
    std::fs::create_dir(dir.path().join("index")).unwrap();
    dir.write("index/chan_0.idx", &index(4));
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 3]));
    assert_eq!(
        d.warnings,
        vec![
            format!(
                "{}: at byte 100: wrong packet magic number 0x00000000 (expected 0xc1fc1fc1); 100 bytes skipped, reading resumes at byte \
                 200 (next packet, found by the packet index)",
                path
            ),
            format!(
                "{}: at byte 200: wrong packet magic number 0x00000000 (expected 0xc1fc1fc1); 100 bytes skipped, reading resumes at byte \
                 300 (next packet, found by the packet index)",
                path
            ),
        ]
    );
    // Packets 1 and 2 are gone: the sequence numbers say so.
    assert_eq!(d.loss[0].packets_lost, 2);
}

#[test]
fn a_damaged_stream_id_is_repaired_when_the_sizes_confirm_the_packet() {
    // Packet 1's stream_id (bytes 4..8) set to 9, a class the metadata does
    // not declare.
    let mut file = packets(3);
    file[104] = 9;
    let (dir, path) = trace(&file);
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2]));
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 100: packet's stream id 9 is damaged (its sizes lead to the next packet): the packet is read as stream class 0",
            path
        )]
    );
}

#[test]
fn an_undecodable_event_loses_the_rest_of_its_packet_only() {
    // Packet 1: x = 1, then an event of unknown id 7 (at byte 100 + 56 + 13
    // = 169), then x = 11; its size leads to packet 2.
    let mut file = packets(1);
    let mut pk = Pkt::new(false);
    pk.packet_bytes = 100;
    pk.seq = 1;
    pk.ts_begin = 100;
    pk.ts_end = 190;
    let mut evs = event(110, 1);
    evs.extend(ev(false, 7, 120, &[0; 4]));
    evs.extend(event(130, 11));
    file.extend(pk.build(&evs));
    file.extend(&packets(3)[200..]);
    let (dir, path) = trace(&file);
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2]));
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 169: event cannot be decoded (unknown event id 7 in stream class 0); 31 bytes skipped, reading resumes at \
             byte 200 (next packet, found by this packet's size)",
            path
        )]
    );
}

#[test]
fn time_going_backwards_is_repaired_and_reported() {
    // Events at 10, 50, 30 (before 50: damaged), 60, all in one packet
    // [0, 90]. The third event is at byte 56 + 2 * 13 = 82.
    let mut evs = Vec::new();
    for (ts, x) in [(10, 0), (50, 1), (30, 2), (60, 3)] {
        evs.extend(event(ts, x));
    }
    let mut pk = Pkt::new(false);
    pk.ts_end = 90;
    let (dir, path) = trace(&pk.build(&evs));
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2, 3]));
    assert_eq!(d.ts, vec![10, 50, 50, 60]);
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 82: time goes backwards: event at 30 ns is 20 ns before the previous event of this stream; it is given the \
             previous event's time 50 ns (and so is any later event of this packet that does the same)",
            path
        )]
    );
}

#[test]
fn event_after_its_packet_end_is_repaired_and_reported() {
    let mut evs = event(10, 0);
    evs.extend(event(5000, 1));
    let mut pk = Pkt::new(false);
    pk.ts_end = 90;
    let (dir, path) = trace(&pk.build(&evs));
    let d = dump(dir.path());
    assert_eq!(d.ts, vec![10, 10]);
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 69: event time 5000 ns is after its packet's end (90 ns): the timestamp is damaged; the event is given the \
             previous event's time 10 ns (and so is any later event of this packet that does the same)",
            path
        )]
    );
}

#[test]
fn timestamp_begin_before_the_previous_packet_is_not_trusted() {
    // Packet 2's timestamp_begin (200) damaged into 4: before packet 1's
    // begin (100). Its clock starts at the previous event's time instead
    // (110); its event carries its full time, 210, within [110, 290].
    let mut file = packets(3);
    put_u64(&mut file, 200 + TS_BEGIN_AT, 4);
    let (dir, path) = trace(&file);
    let d = dump(dir.path());
    assert_eq!(d.ts, vec![10, 110, 210]);
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 200: packet timestamp_begin 4 ns is before the previous packet's: damaged; this packet's clock starts at \
             110 ns instead (the previous event's time)",
            path
        )]
    );
}

#[test]
fn a_copied_stream_file_is_read_once() {
    let file = packets(2);
    let (dir, path) = trace(&file);
    let copy = dir.write("chan_0_copy", &file);
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1]));
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: holds the same stream as {} (stream class 0, instance none, first packet number 0, same bytes): the stream is read \
             once, from that file",
            copy.display(),
            path
        )]
    );
    assert_eq!(d.loss.len(), 1);
}

#[test]
fn files_of_one_rotated_stream_are_all_read() {
    // LTTng's tracefile rotation: chan_0_0 holds packets 0-1, chan_0_1
    // packets 2-3 of the same stream. Not copies.
    let all = packets(4);
    let dir = TempDir::new("rotated");
    dir.write("metadata", std_metadata("le", EVENT).as_bytes());
    dir.write("chan_0_0", &all[..200]);
    dir.write("chan_0_1", &all[200..]);
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2, 3]));
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
}

#[test]
fn a_trace_given_twice_or_inside_another_input_is_read_once() {
    let top = TempDir::new("twice");
    let sub = top.path().join("ust");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("metadata"), std_metadata("le", EVENT)).unwrap();
    std::fs::write(sub.join("chan_0"), packets(2)).unwrap();
    for inputs in [vec![top.path().to_path_buf(), top.path().to_path_buf()], vec![top.path().to_path_buf(), sub.clone()]] {
        let mut set = TraceSet::open(&inputs).unwrap();
        let mut n = 0;
        while set.next().is_some() {
            n += 1;
        }
        assert_eq!(n, 2);
        let w: Vec<String> = set.all_warnings().iter().map(|w| w.to_string()).collect();
        assert_eq!(
            w,
            vec![format!(
                "{}: input given more than once: its trace was found under {} already; read once",
                inputs[1].display(),
                top.path().display()
            )]
        );
    }
}

#[test]
fn an_impossible_index_is_not_used() {
    let mut idx = index(3);
    // Entry 1's offset (bytes 16 + 56 .. + 8) set to 0: out of order.
    idx[72..80].copy_from_slice(&0u64.to_be_bytes());
    let (dir, _) = trace(&packets(3));
    std::fs::create_dir(dir.path().join("index")).unwrap();
    let ipath = dir.write("index/chan_0.idx", &idx);
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2]));
    assert_eq!(
        d.warnings,
        vec![format!("{}: packet index not used: entry 1 (packet at byte 0) is impossible or out of order", ipath.display())]
    );
}

#[test]
fn a_file_cut_at_a_packet_boundary_is_found_truncated_by_its_index() {
    let (dir, path) = trace(&packets(3)[..200]);
    std::fs::create_dir(dir.path().join("index")).unwrap();
    let ipath = dir.write("index/chan_0.idx", &index(3));
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1]));
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 200: stream file is truncated: it ends at byte 200, and its packet index {} lists 1 more packet from there",
            path,
            ipath.display()
        )]
    );
}

#[test]
fn a_damaged_content_size_reads_the_events_up_to_the_padding() {
    // Packet 1's content size all ones: larger than its packet size (800
    // bits), which leads to packet 2. Its event is read; the zero padding after
    // it decodes as an event at time 0 (before the packet's begin, 100): the
    // content is taken to end there (byte 169), and packet 2 is read.
    let mut file = packets(3);
    put_u64(&mut file, 100 + 24, u64::MAX);
    let (dir, path) = trace(&file);
    let d = dump(dir.path());
    assert_eq!(xs(&d), expect_xs(&[0, 1, 2]));
    assert_eq!(
        d.warnings,
        vec![
            format!(
                "{}: at byte 100: packet content size 18446744073709551615 bits is larger than its packet size 800 bits, which leads \
                 to the next packet: the content size is damaged; events are read until one makes no sense",
                path
            ),
            format!(
                "{}: at byte 169: the packet's content (whose size is damaged) is taken to end here: the next event's time 0 ns is \
                 outside the packet's; 31 bytes up to the packet's end are not read",
                path
            ),
        ]
    );
}

#[test]
fn a_begin_after_the_end_is_told_from_an_end_before_the_begin() {
    // Packet 1 (begin 100, end 190, event at 110) between packets 0 and 2
    // (begins 0 and 200). End damaged into 50: the begin is consistent with
    // packet 2's, so the end is not used. Begin damaged into 500: after packet
    // 2's begin, so the begin is not used: the clock starts at the previous
    // event's time, 10. The event carries its full time either way.
    let mut file = packets(3);
    put_u64(&mut file, 100 + 16, 50);
    let (dir, path) = trace(&file);
    let d = dump(dir.path());
    assert_eq!(d.ts, vec![10, 110, 210]);
    assert_eq!(
        d.warnings,
        vec![format!("{}: at byte 100: packet timestamp_end 50 ns is before its timestamp_begin 100 ns: damaged, not used", path)]
    );

    let mut file = packets(3);
    put_u64(&mut file, 100 + TS_BEGIN_AT, 500);
    let (dir, path) = trace(&file);
    let d = dump(dir.path());
    assert_eq!(d.ts, vec![10, 110, 210]);
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 100: packet timestamp_begin 500 ns is after the packet's end: damaged; this packet's clock starts at 10 ns \
             instead (the previous event's time)",
            path
        )]
    );
}

#[test]
fn stream_files_without_metadata_are_reported() {
    let top = TempDir::new("orphan");
    for sub in ["a", "b"] {
        std::fs::create_dir(top.path().join(sub)).unwrap();
        std::fs::write(top.path().join(sub).join("chan_0"), packets(1)).unwrap();
    }
    std::fs::write(top.path().join("a/metadata"), std_metadata("le", EVENT)).unwrap();
    let d = dump(top.path());
    assert_eq!(xs(&d), expect_xs(&[0]));
    assert_eq!(
        d.warnings,
        vec![format!("{}/b: holds CTF stream files, but no 'metadata' file: its streams are not read", top.path().display())]
    );
    let e = TraceSet::open(&[top.path().join("b")]).err().expect("no trace there");
    assert_eq!(
        e.to_string(),
        format!("{0}/b: no CTF trace found: {0}/b holds CTF stream files, but its 'metadata' file is missing", top.path().display())
    );
}
