//! Field layouts the compiled decoding programs read in more than one way
//! (issue 42): whole-byte integers and text arrays fused into one read at
//! fixed offsets when they start on a byte, read one by one when they do not
//! (after a bit field) or when fewer than 8 bytes follow them in the file.
//! Expected values are those written into the bytes by hand below.

mod common;

use common::*;

const EVENTS: &str = r#"
event { id = 0; name = "bits"; stream_id = 0; fields := struct {
    integer { size = 3; align = 1; signed = false; } a;
    integer { size = 8; align = 1; signed = false; } b;
    integer { size = 16; align = 1; signed = true; } c;
    integer { size = 8; align = 8; signed = false; } d;
    integer { size = 32; align = 8; signed = true; } e;
    integer { size = 8; align = 8; signed = false; encoding = UTF8; } t[3];
}; };
event { id = 1; name = "bytes"; stream_id = 0; fields := struct {
    uint8_t p;
    uint16_t q;
    integer { size = 32; align = 8; signed = true; } r;
    uint64_t s;
}; };
"#;

/// Payload of "bits": a = 5 (bits 0-2), b = 0xA7 (bits 3-10), c = -1234
/// (bits 11-26), then d = 200 at the next byte (bit 32), e = -7, t = "hi".
fn bits_payload() -> Vec<u8> {
    let low: u32 = 5 | (0xA7 << 3) | ((-1234i16 as u16 as u32) << 11);
    let mut w = W::le();
    w.u32(low).u8(200).u32(-7i32 as u32).bytes(b"hi\0");
    w.take()
}

/// Payload of "bytes": p = 1, q = 0x1234, r = -2, s = 2^64 - 2.
fn bytes_payload() -> Vec<u8> {
    let mut w = W::le();
    w.u8(1).u16(0x1234).u32(-2i32 as u32).u64(u64::MAX - 1);
    w.take()
}

const BITS: &str = r#"{"a":5,"b":167,"c":-1234,"d":200,"e":-7,"t":"hi"}"#;
const BYTES: &str = r#"{"p":1,"q":4660,"r":-2,"s":18446744073709551614}"#;

#[test]
fn fused_fields_read_alike_at_a_bit_offset_at_a_byte_and_at_the_end_of_the_file() {
    let dir = TempDir::new("layouts");
    dir.write("metadata", std_metadata("le", EVENTS).as_bytes());
    let mut events = Vec::new();
    events.extend(ev(false, 0, 10, &bits_payload()));
    events.extend(ev(false, 1, 20, &bytes_payload()));
    events.extend(ev(false, 0, 30, &bits_payload()));
    // The last event ends the file: its values are read one by one.
    events.extend(ev(false, 1, 40, &bytes_payload()));
    let mut pk = Pkt::new(false);
    pk.ts_end = 50;
    dir.write("chan_0", &pk.build(&events));
    let d = dump(dir.path());
    assert_eq!(d.warnings, Vec::<String>::new());
    assert_eq!(d.names, ["bits", "bytes", "bits", "bytes"]);
    assert_eq!(d.ts, [10, 20, 30, 40]);
    assert_eq!(d.payloads(), [BITS, BYTES, BITS, BYTES]);
}

#[test]
fn fused_fields_past_the_packet_content_are_an_error_at_the_field() {
    let dir = TempDir::new("layouts-cut");
    dir.write("metadata", std_metadata("le", EVENTS).as_bytes());
    let mut events = ev(false, 1, 10, &bytes_payload());
    // The second event's payload stops inside `s`: the packet's content ends there.
    let cut = ev(false, 1, 20, &bytes_payload());
    events.extend(&cut[..cut.len() - 3]);
    let mut pk = Pkt::new(false);
    pk.ts_end = 50;
    pk.packet_bytes = STD_HEADER_BYTES + events.len() + 64;
    dir.write("chan_0", &pk.build(&events));
    let d = dump(dir.path());
    assert_eq!(d.payloads(), [BYTES]);
    assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
    assert!(d.warnings[0].contains("a 64-bit field runs past the end of the packet content"), "{:?}", d.warnings);
}
