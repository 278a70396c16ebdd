//! Writing events as JSON lines (the `roscope dump` format, docs/dump-format.md).

use crate::reader::TraceSet;
use crate::stream::{StreamReader, Val};
use crate::types::Ty;

pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let b = s.as_bytes();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        let esc: Option<&[u8]> = match c {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0..=0x1f | 0x7f => None,
            _ => continue,
        };
        out.extend_from_slice(&b[start..i]);
        match esc {
            Some(e) => out.extend_from_slice(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// A text's bytes in the stream file, cut at the first NUL.
pub fn bytes_at(data: &[u8], off: u64, len: u32) -> &[u8] {
    let s = &data[off as usize..off as usize + len as usize];
    match memchr::memchr(0, s) {
        Some(n) => &s[..n],
        None => s,
    }
}

/// Text from the stream file: cut at the first NUL, invalid UTF-8 replaced.
pub fn text_at(data: &[u8], off: u64, len: u32) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes_at(data, off, len))
}

#[inline]
fn write_u64(out: &mut Vec<u8>, v: u64) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}
#[inline]
fn write_i64(out: &mut Vec<u8>, v: i64) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}

fn write_f64(out: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        out.extend_from_slice(b"\"nan\"");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"\"inf\"" } else { b"\"-inf\"" });
    } else {
        let mut b = ryu::Buffer::new();
        out.extend_from_slice(b.format_finite(v).as_bytes());
    }
}

/// Writes one value of type `ty` from `tape[*i..]`.
pub fn write_value(out: &mut Vec<u8>, ty: &Ty, tape: &[Val], i: &mut usize, data: &[u8]) {
    match ty {
        Ty::Int(_) => write_scalar(out, tape[*i], data, i),
        Ty::Enum(e) => {
            let v = tape[*i];
            *i += 1;
            let iv: i128 = match v {
                Val::U(x) => x as i128,
                Val::I(x) => x as i128,
                _ => 0,
            };
            match e.label(iv) {
                Some(l) => write_str(out, l),
                None => match v {
                    Val::U(x) => write_u64(out, x),
                    Val::I(x) => write_i64(out, x),
                    _ => out.extend_from_slice(b"null"),
                },
            }
        }
        Ty::Float(_) | Ty::Str => write_scalar(out, tape[*i], data, i),
        Ty::Struct(s) => {
            out.push(b'{');
            for (k, f) in s.fields.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                write_str(out, &f.name);
                out.push(b':');
                write_value(out, &f.ty, tape, i, data);
            }
            out.push(b'}');
        }
        Ty::Array { elem, len, text } => {
            if *text {
                write_scalar(out, tape[*i], data, i);
            } else {
                out.push(b'[');
                for k in 0..*len {
                    if k > 0 {
                        out.push(b',');
                    }
                    write_value(out, elem, tape, i, data);
                }
                out.push(b']');
            }
        }
        Ty::Seq { elem, text, .. } => {
            let n = match tape[*i] {
                Val::Len(n) => n,
                _ => 0,
            };
            *i += 1;
            if *text {
                write_scalar(out, tape[*i], data, i);
            } else {
                out.push(b'[');
                for k in 0..n {
                    if k > 0 {
                        out.push(b',');
                    }
                    write_value(out, elem, tape, i, data);
                }
                out.push(b']');
            }
        }
        Ty::Variant(v) => {
            let o = match tape[*i] {
                Val::Opt(o) => o as usize,
                _ => 0,
            };
            *i += 1;
            let opt = &v.options[o];
            out.push(b'{');
            write_str(out, &opt.name);
            out.push(b':');
            write_value(out, &opt.ty, tape, i, data);
            out.push(b'}');
        }
    }
}

#[inline]
fn write_scalar(out: &mut Vec<u8>, v: Val, data: &[u8], i: &mut usize) {
    *i += 1;
    match v {
        Val::U(x) => write_u64(out, x),
        Val::I(x) => write_i64(out, x),
        Val::F(x) => write_f64(out, x),
        Val::Str(off, len) => write_str(out, &text_at(data, off, len)),
        Val::Len(n) => write_u64(out, n as u64),
        Val::Opt(n) => write_u64(out, n as u64),
    }
}

/// Writes the fields of a struct scope as `"k":v` pairs (no braces); returns
/// whether anything was written.
fn write_members(out: &mut Vec<u8>, ty: Option<&Ty>, tape: &[Val], i: &mut usize, data: &[u8], mut first: bool) -> bool {
    if let Some(Ty::Struct(s)) = ty {
        for f in &s.fields {
            if !first {
                out.push(b',');
            }
            first = false;
            write_str(out, &f.name);
            out.push(b':');
            write_value(out, &f.ty, tape, i, data);
        }
    } else if let Some(t) = ty {
        // A scope that is not a struct (unusual): one unnamed member.
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(b"\"_\":");
        write_value(out, t, tape, i, data);
    }
    !first
}

/// Writes the current event of `s` as one JSON line.
pub fn write_event(out: &mut Vec<u8>, set: &TraceSet, s: &StreamReader) {
    write_event_of(out, &set.traces, s)
}

/// `write_event` with the set's traces only.
pub fn write_event_of(out: &mut Vec<u8>, traces: &[crate::reader::Trace], s: &StreamReader) {
    let md = &traces[s.trace].md;
    let sc = &md.streams[s.sc];
    let ec = &md.events[s.cur_class];
    let data = s.data();
    out.extend_from_slice(b"{\"ts\":");
    write_u64(out, s.cur_ts);
    out.extend_from_slice(b",\"name\":");
    write_str(out, &ec.name);
    out.extend_from_slice(b",\"trace\":");
    write_str(out, &traces[s.trace].rel);
    out.extend_from_slice(b",\"stream\":{\"id\":");
    write_u64(out, s.stream_class_id);
    for (k, v) in &s.packet_fields {
        out.push(b',');
        write_str(out, k);
        out.push(b':');
        write_u64(out, *v);
    }
    out.extend_from_slice(b"},\"context\":{");
    let tape = &s.tape;
    let mut i = 0;
    let w = write_members(out, sc.event_context.as_ref(), tape, &mut i, data, true);
    let mut i = s.ctx_start;
    write_members(out, ec.context.as_ref(), tape, &mut i, data, !w);
    out.extend_from_slice(b"},\"payload\":{");
    let mut i = s.payload_start;
    write_members(out, ec.payload.as_ref(), tape, &mut i, data, true);
    out.extend_from_slice(b"}}\n");
}
