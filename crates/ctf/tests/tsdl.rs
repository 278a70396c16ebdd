//! Hand-written metadata and hand-built stream files, decoded by roscope-ctf.
//!
//! Expected values are computed by hand from the bytes written here (the
//! comments show the arithmetic); each trace was also checked with
//! `babeltrace2 DIR` (run with ROSCOPE_KEEP_TEST_DIRS=1 to keep the
//! directories), which agrees with every value asserted.

mod common;

use common::*;

fn ints_event(extra_le: bool) -> String {
    // In the little-endian trace, "native" fields are LE and some are
    // declared BE; in the big-endian trace, the reverse.
    let other = if extra_le { "be" } else { "le" };
    format!(
        r#"event {{
    id = 0; name = "ints"; stream_id = 0;
    fields := struct {{
        integer {{ size = 16; align = 8; signed = false; }} u16n;
        integer {{ size = 16; align = 8; signed = false; byte_order = {o}; }} u16o;
        integer {{ size = 32; align = 8; signed = true; byte_order = {o}; }} i32o;
        integer {{ size = 32; align = 8; signed = true; }} i32n;
        integer {{ size = 64; align = 8; signed = false; byte_order = {o}; }} u64o;
        integer {{ size = 64; align = 8; signed = true; }} _i64n;
        integer {{ size = 8; align = 8; signed = true; }} i8;
        integer {{ size = 8; align = 8; signed = false; base = 16; }} u8;
    }};
}};"#,
        o = other
    )
}

fn ints_trace(be: bool) {
    let dir = TempDir::new(if be { "ints-be" } else { "ints-le" });
    dir.write("metadata", std_metadata(if be { "be" } else { "le" }, &ints_event(!be)).as_bytes());
    // Bytes written literally, native order first, then the other order.
    let native = |le: &[u8], be_: &[u8]| -> Vec<u8> {
        if be {
            be_.to_vec()
        } else {
            le.to_vec()
        }
    };
    let other = |le: &[u8], be_: &[u8]| -> Vec<u8> {
        if be {
            le.to_vec()
        } else {
            be_.to_vec()
        }
    };
    let mut p = Vec::new();
    p.extend(native(&[0x34, 0x12], &[0x12, 0x34])); // u16n = 0x1234 = 4660
    p.extend(other(&[0x34, 0x12], &[0x12, 0x34])); // u16o = 4660
    p.extend(other(&[0xFE, 0xFF, 0xFF, 0xFF], &[0xFF, 0xFF, 0xFF, 0xFE])); // i32o = -2
    p.extend(native(&[0x60, 0x79, 0xFE, 0xFF], &[0xFF, 0xFE, 0x79, 0x60])); // i32n = 0xFFFE7960 = -100000
    p.extend(other(&[8, 7, 6, 5, 4, 3, 2, 1], &[1, 2, 3, 4, 5, 6, 7, 8])); // u64o = 0x0102030405060708
    p.extend(native(&[0, 0, 0, 0, 0, 0, 0, 0x80], &[0x80, 0, 0, 0, 0, 0, 0, 0])); // i64 min
    p.extend([0x80, 0xFF]); // i8 = -128, u8 = 255
    let mut q = Vec::new();
    q.extend(native(&[0xFF, 0xFF], &[0xFF, 0xFF])); // 65535
    q.extend(other(&[0x01, 0x00], &[0x00, 0x01])); // 1
    q.extend(other(&[0xFF, 0xFF, 0xFF, 0x7F], &[0x7F, 0xFF, 0xFF, 0xFF])); // i32 max
    q.extend(native(&[0, 0, 0, 0x80], &[0x80, 0, 0, 0])); // i32 min
    q.extend(other(&[0xFF; 8], &[0xFF; 8])); // u64 max
    q.extend(native(&[0xFF; 8], &[0xFF; 8])); // -1
    q.extend([0x7F, 0x00]);
    let mut evs = ev(be, 0, 1000, &p);
    evs.extend(ev(be, 0, 2000, &q));
    let mut pk = Pkt::new(be);
    pk.ts_begin = 1000;
    pk.ts_end = 2000;
    dir.write("chan_0", &pk.build(&evs));
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.ts, vec![1000, 2000]);
    assert_eq!(
        d.payloads(),
        vec![
            r#"{"u16n":4660,"u16o":4660,"i32o":-2,"i32n":-100000,"u64o":72623859790382856,"i64n":-9223372036854775808,"i8":-128,"u8":255}"#,
            r#"{"u16n":65535,"u16o":1,"i32o":2147483647,"i32n":-2147483648,"u64o":18446744073709551615,"i64n":-1,"i8":127,"u8":0}"#,
        ]
    );
}

#[test]
fn integers_little_endian_trace() {
    ints_trace(false);
}

#[test]
fn integers_big_endian_trace() {
    ints_trace(true);
}

const BITS_EVENT: &str = r#"event {
    id = 0; name = "bits"; stream_id = 0;
    fields := struct {
        integer { size = 3; align = 1; signed = false; } a;
        integer { size = 5; align = 1; signed = false; } b;
        integer { size = 9; align = 1; signed = false; } c;
        integer { size = 7; align = 1; signed = true; } d;
        integer { size = 1; align = 1; signed = false; } h;
        integer { size = 64; align = 1; signed = false; } i;
        uint8_t z;
        integer { size = 4; align = 1; signed = true; } e;
        integer { size = 4; align = 1; signed = true; } f;
    };
};"#;

// a = 5, b = 19, c = 421 (0x1A5), d = -3 (7 bits: 0x7D), h = 1,
// i = 0x0123456789ABCDEF, z = 0x42 (byte-aligned: byte 12 of the payload),
// e = -8 (4 bits: 0x8), f = 7.
const BITS_EXPECTED: &str = r#"{"a":5,"b":19,"c":421,"d":-3,"h":1,"i":81985529216486895,"z":66,"e":-8,"f":7}"#;

#[test]
fn bitfields_little_endian() {
    // LE: fields fill each byte from its least significant bit.
    // byte0 = a | b << 3 = 0x05 | 0x98 = 0x9D; byte1 = c & 0xFF = 0xA5;
    // byte2 = (c >> 8) | d << 1 = 0x01 | 0xFA = 0xFB;
    // bytes 3..12 = (i << 1 | h) as 72-bit LE; byte 12 = z;
    // byte 13 = e | f << 4 = 0x08 | 0x70 = 0x78.
    let dir = TempDir::new("bits-le");
    dir.write("metadata", std_metadata("le", BITS_EVENT).as_bytes());
    let payload = [0x9D, 0xA5, 0xFB, 0xDF, 0x9B, 0x57, 0x13, 0xCF, 0x8A, 0x46, 0x02, 0x00, 0x42, 0x78];
    let mut pk = Pkt::new(false);
    pk.ts_begin = 5;
    dir.write("chan_0", &pk.build(&ev(false, 0, 7, &payload)));
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.payloads(), vec![BITS_EXPECTED]);
}

#[test]
fn bitfields_big_endian() {
    // BE: fields fill each byte from its most significant bit.
    // byte0 = a << 5 | b = 0xA0 | 0x13 = 0xB3; byte1 = c >> 1 = 0xD2;
    // byte2 = (c & 1) << 7 | d = 0x80 | 0x7D = 0xFD;
    // bytes 3..12 = (h << 71 | i << 7) as 72-bit BE; byte 12 = z;
    // byte 13 = e << 4 | f = 0x80 | 0x07 = 0x87.
    let dir = TempDir::new("bits-be");
    dir.write("metadata", std_metadata("be", BITS_EVENT).as_bytes());
    let payload = [0xB3, 0xD2, 0xFD, 0x80, 0x91, 0xA2, 0xB3, 0xC4, 0xD5, 0xE6, 0xF7, 0x80, 0x42, 0x87];
    let mut pk = Pkt::new(true);
    pk.ts_begin = 5;
    dir.write("chan_0", &pk.build(&ev(true, 0, 7, &payload)));
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.payloads(), vec![BITS_EXPECTED]);
}

/// Metadata with an LTTng-like compact event header: 5-bit id, 27-bit
/// timestamp mapped to the clock.
fn compact_metadata() -> String {
    let md = std_metadata("le", r#"event { id = 3; name = "tick"; stream_id = 0; fields := struct { uint8_t k; }; };"#);
    md.replace(
        "event.header := struct {\n        uint8_t id;\n        uint64_clock_t timestamp;\n    };",
        "event.header := struct {\n        integer { size = 5; align = 1; signed = false; } id;\n        integer { size = 27; align = 1; signed = false; map = clock.c.value; } timestamp;\n    };",
    )
}

/// A compact-header event: id in bits 0-4, timestamp bits in 5-31 (LE u32).
fn compact_ev(ts27: u32, k: u8) -> Vec<u8> {
    assert!(ts27 < 1 << 27);
    let mut w = W::le();
    w.u32(3 | ts27 << 5).u8(k);
    w.b
}

#[test]
fn compact_timestamp_wraps_within_and_across_packets() {
    let dir = TempDir::new("ts27");
    let md = compact_metadata();
    assert!(md.contains("size = 27"));
    dir.write("metadata", md.as_bytes());
    let mut file = Vec::new();
    // Packet 0 begins at 0x7FFFFF0, just before the 27-bit counter wraps.
    let mut evs = Vec::new();
    evs.extend(compact_ev(0x7FFFFF5, 0)); // 0x07FFFFF5 = 134217717
    evs.extend(compact_ev(0x0000003, 1)); // wrapped: 0x08000003 = 134217731
    evs.extend(compact_ev(0x0000003, 2)); // equal: no wrap, 134217731
    evs.extend(compact_ev(0x0000010, 3)); // 0x08000010 = 134217744
    let mut pk = Pkt::new(false);
    pk.ts_begin = 0x7FFFFF0;
    pk.ts_end = 0x8000010;
    pk.seq = 0;
    file.extend(pk.build(&evs));
    // Packet 1 begins at 0xFFFFFF0 (low 27 bits 0x7FFFFF0): its first event wraps.
    let mut evs = Vec::new();
    evs.extend(compact_ev(0x0000005, 4)); // 0x10000005 = 268435461
    evs.extend(compact_ev(0x7FFFFFF, 5)); // no wrap: 0x17FFFFFF = 402653183
    pk.ts_begin = 0xFFFFFF0;
    pk.ts_end = 0x17FFFFFF;
    pk.seq = 1;
    file.extend(pk.build(&evs));
    // Packet 2 begins at 0x1_0000_0003; an event with low bits 1 < 3 is after a wrap.
    pk.ts_begin = 0x1_0000_0003;
    pk.ts_end = 0x1_0800_0001;
    pk.seq = 2;
    file.extend(pk.build(&compact_ev(0x0000001, 6))); // 0x1_0800_0001 = 4429185025
    dir.write("chan_0", &file);
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.ts, vec![134217717, 134217731, 134217731, 134217744, 268435461, 402653183, 4429185025]);
    assert!(d.ts.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(d.payloads().iter().map(|p| p.as_str()).collect::<Vec<_>>()[6], r#"{"k":6}"#);
    assert_eq!(d.names, vec!["tick"; 7]);
}

#[test]
fn enumerations_ranges_and_unmatched_values() {
    let dir = TempDir::new("enum");
    let events = r#"
enum colour : uint8_t { A = 0, B = 1 ... 9, C, "D D" = 20 ... 30, E = 25 };
event {
    id = 0; name = "en"; stream_id = 0;
    fields := struct {
        enum colour e;
        enum : integer { size = 8; align = 8; signed = true; } { NEG = -5 ... -1, ZERO = 0 } s;
    };
};"#;
    dir.write("metadata", std_metadata("le", events).as_bytes());
    // (e, s as a byte): 0 -> A; 5 -> B; 10 -> C (implicit: 9 + 1); 25 -> "D D"
    // (the first declared of two matching mappings); 15 and 255 -> no label.
    // s: 0xFD = -3 -> NEG; 0 -> ZERO; 7 and 0x80 = -128 -> no label.
    let vals: [(u8, u8); 6] = [(0, 0xFD), (5, 0), (10, 7), (25, 0x80), (15, 0xFF), (255, 0xFB)];
    let mut evs = Vec::new();
    for (k, (e, s)) in vals.iter().enumerate() {
        evs.extend(ev(false, 0, 10 + k as u64, &[*e, *s]));
    }
    dir.write("chan_0", &Pkt::new(false).build(&evs));
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(
        d.payloads(),
        vec![
            r#"{"e":"A","s":"NEG"}"#,
            r#"{"e":"B","s":"ZERO"}"#,
            r#"{"e":"C","s":7}"#,
            r#"{"e":"D D","s":-128}"#,
            r#"{"e":15,"s":"NEG"}"#,
            r#"{"e":255,"s":"NEG"}"#,
        ]
    );
}

const VARIANT_EVENT: &str = r#"
event {
    id = 0; name = "var"; stream_id = 0;
    fields := struct {
        enum : uint8_t { INT = 0, STR = 1, PAIR = 2, NONE = 3 } tag;
        variant <tag> {
            uint32_t INT;
            string STR;
            struct { uint8_t a; uint16_t b; } PAIR;
        } v;
        uint8_t after;
    };
};"#;

#[test]
fn variants_selected_by_enum_tag() {
    let dir = TempDir::new("variant");
    dir.write("metadata", std_metadata("le", VARIANT_EVENT).as_bytes());
    let mut evs = Vec::new();
    evs.extend(ev(false, 0, 1, &[0, 7, 0, 0, 0, 9])); // INT = 7, after = 9
    evs.extend(ev(false, 0, 2, &[1, b'h', b'i', 0, 10])); // STR = "hi"
    evs.extend(ev(false, 0, 3, &[2, 1, 0x01, 0x02, 11])); // PAIR a = 1, b = 0x0201 = 513
    let bad_at = STD_HEADER_BYTES + evs.len();
    evs.extend(ev(false, 0, 4, &[3, 0, 0, 0, 0, 12])); // NONE: no option of that name
    evs.extend(ev(false, 0, 5, &[0, 1, 0, 0, 0, 13]));
    let path = dir.write("chan_0", &Pkt::new(false).build(&evs));
    let d = dump(dir.path());
    assert_eq!(
        d.payloads(),
        vec![
            r#"{"tag":"INT","v":{"INT":7},"after":9}"#,
            r#"{"tag":"STR","v":{"STR":"hi"},"after":10}"#,
            r#"{"tag":"PAIR","v":{"PAIR":{"a":1,"b":513}},"after":11}"#,
        ]
    );
    // The event whose tag selects nothing is reported where it starts.
    assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
    let prefix = format!("{}: at byte {}: ", path.display(), bad_at);
    assert!(d.warnings[0].starts_with(&prefix), "{:?} does not start with {:?}", d.warnings[0], prefix);
    assert!(d.warnings[0].contains("variant"), "{}", d.warnings[0]);
}

#[test]
fn sequences_with_lengths_from_sibling_fields() {
    let dir = TempDir::new("seq");
    let events = r#"
event {
    id = 0; name = "seq"; stream_id = 0;
    fields := struct {
        uint8_t n;
        uint16_t vals[n];
        uint32_t m;
        integer { size = 8; align = 8; signed = false; encoding = UTF8; } txt[m];
        uint8_t zero;
        uint16_t none[zero];
        uint8_t again[event.fields.n];
        uint8_t end;
    };
};"#;
    dir.write("metadata", std_metadata("le", events).as_bytes());
    let mut p = W::le();
    p.u8(3).u16(1).u16(2).u16(65535); // n = 3, vals
    p.u32(5).bytes(b"ab\0cd"); // m = 5, text cut at its NUL
    p.u8(0); // zero, then no element
    p.bytes(&[7, 8, 9]); // again[n]
    p.u8(0xEE);
    let mut q = W::le();
    q.u8(0).u32(3).bytes(b"xyz").u8(0).u8(1);
    let mut evs = ev(false, 0, 1, &p.take());
    evs.extend(ev(false, 0, 2, &q.take()));
    dir.write("chan_0", &Pkt::new(false).build(&evs));
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(
        d.payloads(),
        vec![
            r#"{"n":3,"vals":[1,2,65535],"m":5,"txt":"ab","zero":0,"none":[],"again":[7,8,9],"end":238}"#,
            r#"{"n":0,"vals":[],"m":3,"txt":"xyz","zero":0,"none":[],"again":[],"end":1}"#,
        ]
    );
}

#[test]
fn text_arrays_are_cut_at_nul_and_strings_end_at_nul() {
    let dir = TempDir::new("text");
    let events = r#"
event {
    id = 0; name = "txt"; stream_id = 0;
    fields := struct {
        integer { size = 8; align = 8; signed = false; encoding = UTF8; } name[8];
        uint8_t raw[3];
        string s;
        uint8_t after;
    };
};"#;
    dir.write("metadata", std_metadata("le", events).as_bytes());
    let mut evs = ev(false, 0, 1, b"abc\0xyz\0\x01\x02\x03hello\0\x05");
    evs.extend(ev(false, 0, 2, b"abcdefgh\0\0\xff\0\x06"));
    evs.extend(ev(false, 0, 3, b"q\"\\\n\0\0\0\0\x01\x01\x01tab\there\0\x07"));
    dir.write("chan_0", &Pkt::new(false).build(&evs));
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(
        d.payloads(),
        vec![
            r#"{"name":"abc","raw":[1,2,3],"s":"hello","after":5}"#,
            r#"{"name":"abcdefgh","raw":[0,0,255],"s":"","after":6}"#,
            r#"{"name":"q\"\\\n","raw":[1,1,1],"s":"tab\there","after":7}"#,
        ]
    );
}

#[test]
fn struct_align_is_in_bits_relative_to_the_packet() {
    // babeltrace2 reads `align(32)` as 32 bits (4 bytes), like every CTF
    // alignment; the payload struct inherits the largest alignment of its
    // fields, so it starts 4-byte aligned too.
    let dir = TempDir::new("align");
    let events = r#"
event {
    id = 0; name = "al"; stream_id = 0;
    fields := struct {
        uint8_t a;
        struct { uint8_t b; } align(32) s;
        uint8_t c;
    };
};"#;
    dir.write("metadata", std_metadata("le", events).as_bytes());
    // Event 0 at byte 56: id, ts (bytes 57..65), payload aligned from 65 to
    // 68: a = byte 68, s aligned to 72: b = byte 72, c = byte 73.
    let mut evs = ev(false, 0, 5, &[0xEE, 0xEE, 0xEE, 1, 0xEE, 0xEE, 0xEE, 2, 3]);
    assert_eq!(STD_HEADER_BYTES + evs.len(), 74);
    // Event 1 at byte 74: id, ts (75..83), payload at 84: a = 84, b = 88, c = 89.
    evs.extend(ev(false, 0, 6, &[0xEE, 4, 0xEE, 0xEE, 0xEE, 5, 6]));
    dir.write("chan_0", &Pkt::new(false).build(&evs));
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.payloads(), vec![r#"{"a":1,"s":{"b":2},"c":3}"#, r#"{"a":4,"s":{"b":5},"c":6}"#]);
}

const SIMPLE_EVENT: &str = r#"event { id = 0; name = "e"; stream_id = 0; fields := struct { uint32_t x; }; };"#;

fn x(v: u32) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

#[test]
fn truncated_stream_file_keeps_events_before_the_cut() {
    let dir = TempDir::new("trunc");
    dir.write("metadata", std_metadata("le", SIMPLE_EVENT).as_bytes());
    let mut evs = ev(false, 0, 10, &x(1));
    evs.extend(ev(false, 0, 20, &x(2)));
    let third = STD_HEADER_BYTES + evs.len(); // 56 + 2 * 13 = 82
    evs.extend(ev(false, 0, 30, &x(3)));
    let mut pk = Pkt::new(false);
    pk.packet_bytes = 4096;
    let full = pk.build(&evs);
    // Cut 5 bytes into the third event (its id and 4 of its 8 timestamp bytes).
    let path = dir.write("chan_0", &full[..third + 5]);
    // A second, intact stream file of the same trace is read whole.
    let mut pk1 = Pkt::new(false);
    pk1.packet_bytes = 128;
    let mut evs1 = ev(false, 0, 15, &x(100));
    evs1.extend(ev(false, 0, 25, &x(200)));
    dir.write("chan_1", &pk1.build(&evs1));
    let d = dump(dir.path());
    assert_eq!(d.ts, vec![10, 15, 20, 25]);
    assert_eq!(d.payloads(), vec![r#"{"x":1}"#, r#"{"x":100}"#, r#"{"x":2}"#, r#"{"x":200}"#]);
    let p = path.display().to_string();
    assert!(d.warnings.iter().any(|w| w.starts_with(&format!("{}: at byte 0: ", p)) && w.contains("truncated")), "{:?}", d.warnings);
    assert!(
        d.warnings.iter().any(|w| w.starts_with(&format!("{}: at byte {}: ", p, third))),
        "no warning at byte {}: {:?}",
        third,
        d.warnings
    );
    assert!(d.warnings.iter().all(|w| w.starts_with(&p)), "{:?}", d.warnings);
}

#[test]
fn wrong_packet_magic_and_sizes_skip_that_packet_only() {
    // Three packets of 100 bytes; the second one's magic is wrong and its
    // content size (bytes 24..32 of the packet) all ones. Reading resumes at
    // the third (found by its magic number: there is no index), and the
    // warning says what was skipped.
    let dir = TempDir::new("magic");
    dir.write("metadata", std_metadata("le", SIMPLE_EVENT).as_bytes());
    let mut pk = Pkt::new(false);
    pk.packet_bytes = 100;
    let mut file = pk.build(&ev(false, 0, 10, &x(1)));
    let second = file.len();
    pk.magic = 0xDEAD_BEEF;
    pk.seq = 1;
    file.extend(pk.build(&ev(false, 0, 20, &x(2))));
    file[second + 24..second + 32].fill(0xFF);
    pk.magic = MAGIC;
    pk.seq = 2;
    file.extend(pk.build(&ev(false, 0, 30, &x(3))));
    let path = dir.write("chan_0", &file);
    dir.write("chan_1", &Pkt::new(false).build(&ev(false, 0, 25, &x(9))));
    let d = dump(dir.path());
    assert_eq!(d.payloads(), vec![r#"{"x":1}"#, r#"{"x":9}"#, r#"{"x":3}"#]);
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte {}: wrong packet magic number 0xdeadbeef (expected 0xc1fc1fc1); 100 bytes skipped, reading resumes at \
             byte 200 (next packet, found by its header's magic number)",
            path.display(),
            second
        )]
    );
}

#[test]
fn a_wrong_magic_alone_is_repaired_when_the_sizes_confirm_the_packet() {
    // The second packet's magic is wrong, the rest of its header is right:
    // its size leads to the third packet's header.
    let dir = TempDir::new("magic1");
    dir.write("metadata", std_metadata("le", SIMPLE_EVENT).as_bytes());
    let mut pk = Pkt::new(false);
    pk.packet_bytes = 100;
    let mut file = pk.build(&ev(false, 0, 10, &x(1)));
    pk.magic = 0xDEAD_BEEF;
    file.extend(pk.build(&ev(false, 0, 20, &x(2))));
    pk.magic = MAGIC;
    file.extend(pk.build(&ev(false, 0, 30, &x(3))));
    let path = dir.write("chan_0", &file);
    let d = dump(dir.path());
    assert_eq!(d.payloads(), vec![r#"{"x":1}"#, r#"{"x":2}"#, r#"{"x":3}"#]);
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 100: packet magic number 0xdeadbeef is damaged, but its sizes lead to the next packet: the packet is read",
            path.display()
        )]
    );
}

#[test]
fn wrong_magic_and_size_in_the_first_packet_yield_no_event_and_a_warning() {
    let dir = TempDir::new("magic0");
    dir.write("metadata", std_metadata("le", SIMPLE_EVENT).as_bytes());
    let mut pk = Pkt::new(false);
    pk.magic = 0x1234_5678;
    let mut file = pk.build(&ev(false, 0, 10, &x(1)));
    file[32..40].copy_from_slice(&3u64.to_le_bytes()); // packet_size: 3 bits
    let path = dir.write("chan_0", &file);
    let d = dump(dir.path());
    assert!(d.lines.is_empty());
    // 69 bytes: 56 of packet header and context, 13 of the event.
    assert_eq!(
        d.warnings,
        vec![format!(
            "{}: at byte 0: wrong packet magic number 0x12345678 (expected 0xc1fc1fc1); no later packet found: the rest of this \
             stream (69 bytes) is skipped",
            path.display()
        )]
    );
}

#[test]
fn events_discarded_counters_become_loss_stats() {
    // The counter is cumulative per stream: 0, 3, 3, 10 -> 3 events lost
    // between packets 0 and 1, 7 between packets 2 and 3. babeltrace2 reports
    // the same: "3 discarded events between [200 and 400]", "7 ... [600, 800]".
    let dir = TempDir::new("discarded");
    dir.write("metadata", std_metadata("le", SIMPLE_EVENT).as_bytes());
    let mut file = Vec::new();
    for (k, disc) in [0u64, 3, 3, 10].iter().enumerate() {
        let mut pk = Pkt::new(false);
        let k64 = k as u64;
        pk.ts_begin = 100 + 200 * k64;
        pk.ts_end = 200 + 200 * k64;
        pk.seq = k64;
        pk.discarded = *disc;
        file.extend(pk.build(&ev(false, 0, 150 + 200 * k64, &x(k as u32))));
    }
    dir.write("chan_0", &file);
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.ts, vec![150, 350, 550, 750]);
    assert_eq!(d.packets, vec![4]);
    assert_eq!(d.loss[0].events_discarded, 10);
    assert_eq!(d.loss[0].intervals, vec![(200, 400, 3), (600, 800, 7)]);
    assert_eq!(d.loss[0].packets_lost, 0);
}

#[test]
fn packet_sequence_number_gaps_count_lost_packets() {
    // Sequence numbers 0, 1, 4, 5, 9: packets 2, 3, 6, 7 and 8 are missing.
    let dir = TempDir::new("seqnum");
    dir.write("metadata", std_metadata("le", SIMPLE_EVENT).as_bytes());
    let mut file = Vec::new();
    for (k, seq) in [0u64, 1, 4, 5, 9].iter().enumerate() {
        let mut pk = Pkt::new(false);
        pk.ts_begin = 100 * seq;
        pk.ts_end = 100 * seq + 50;
        pk.seq = *seq;
        file.extend(pk.build(&ev(false, 0, 100 * seq + 10, &x(k as u32))));
    }
    dir.write("chan_0", &file);
    let d = dump(dir.path());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.ts, vec![10, 110, 410, 510, 910]);
    assert_eq!(d.loss[0].packets_lost, 5);
    assert_eq!(d.loss[0].events_discarded, 0);
}

/// Metadata with LTTng's own `event_header_compact`: a 5-bit enumeration id selecting a
/// variant, the compact form a 27-bit timestamp, the extended form (id 31) a 32-bit id and
/// a 64-bit timestamp, the whole aligned to a byte. Event 40 needs the extended form.
fn lttng_compact_metadata() -> String {
    let md = std_metadata(
        "le",
        r#"event { id = 3; name = "tick"; stream_id = 0; fields := struct { uint8_t k; }; };
event { id = 40; name = "far"; stream_id = 0; fields := struct { uint8_t k; }; };"#,
    );
    md.replace(
        "event.header := struct {\n        uint8_t id;\n        uint64_clock_t timestamp;\n    };",
        "event.header := struct {
        enum : integer { size = 5; align = 1; signed = false; } { compact = 0 ... 30, extended = 31 } id;
        variant <id> {
            struct { integer { size = 27; align = 1; signed = false; map = clock.c.value; } timestamp; } compact;
            struct { uint32_t id; uint64_clock_t timestamp; } extended;
        } v;
    } align(8);",
    )
}

#[test]
fn lttngs_variant_event_header_is_read_in_both_forms() {
    let md = lttng_compact_metadata();
    let parsed = roscope_ctf::metadata::parse(&md, "metadata").unwrap();
    // The shape the reader reads without running the header's program.
    let h = parsed.streams[0].header_fast.expect("LTTng's compact header is recognised");
    assert_eq!((h.id_size, h.ts_size, h.extended), (5, 27, 31));
    let dir = TempDir::new("lttng-compact");
    dir.write("metadata", md.as_bytes());
    let mut evs = Vec::new();
    // compact (`compact_ev`): bits 0-4 the id 3, 5-31 the timestamp's low 27 bits, a payload byte
    let compact = compact_ev;
    evs.extend(compact(0x7FFFFF5, 0)); // 134217717
    evs.extend(compact(0x0000003, 1)); // wrapped: 0x08000003 = 134217731
                                       // extended: id 31 in bits 0-4 (the rest of the byte padding), then at byte 1 the
                                       // 32-bit id 40 and the 64-bit timestamp 0x08000010 = 134217744, then the payload
    let mut w = W::le();
    w.u8(31).u32(40).u64(0x800_0010).u8(2);
    evs.extend(w.b);
    evs.extend(compact(0x0000011, 3)); // after the extended one: 0x08000011 = 134217745
    let mut pk = Pkt::new(false);
    pk.ts_begin = 0x7FFFFF0;
    pk.ts_end = 0x8000011;
    let mut file = pk.build(&evs);
    // A second packet whose content ends 2 bytes into an event's header: the decoder says
    // so (the same words as for any field past the content) and keeps the events before.
    let mut evs = compact(0x0000020, 4); // 0x08000020 = 134217760
    evs.extend([0x03, 0x00]);
    pk.ts_begin = 0x8000020;
    pk.ts_end = 0x8000020;
    pk.seq = 1;
    file.extend(pk.build(&evs));
    dir.write("chan_0", &file);
    let d = dump(dir.path());
    assert_eq!(d.ts, vec![134217717, 134217731, 134217744, 134217745, 134217760]);
    assert_eq!(d.names, vec!["tick", "tick", "far", "tick", "tick"]);
    let ks: Vec<String> = d.payloads();
    assert_eq!(ks, vec![r#"{"k":0}"#, r#"{"k":1}"#, r#"{"k":2}"#, r#"{"k":3}"#, r#"{"k":4}"#]);
    assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
    assert!(d.warnings[0].contains("27-bit field runs past the end of the packet content"), "{:?}", d.warnings);
}
