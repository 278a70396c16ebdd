//! The schema (crates/model/src/schema.rs) is the one declaration of the
//! database's tables: docs/model.md must document exactly it, the model
//! builder must emit exactly its model tables, and its JSON export must say
//! the same.
//!
//! `ROSCOPE_UPDATE_DOCS=1 cargo test -p roscope-model --test schema_docs`
//! rewrites the generated part of docs/model.md.

use std::collections::BTreeMap;
use std::path::PathBuf;

use roscope_model::schema::{self, Origin, CODE_TABLES, TABLES};

const BEGIN: &str = "<!-- schema:begin";
const END: &str = "<!-- schema:end -->";

fn docs_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/model.md")
}

/// `#### `name`` sections of generated Markdown: each section's name and the
/// first backticked cell of each of its table rows (column names, or code
/// values), with the second cell (the type, or the value).
fn sections(md: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in md.lines() {
        if let Some(h) = line.strip_prefix("#### ") {
            let name = h.trim().trim_matches('`').to_string();
            out.entry(name.clone()).or_default();
            cur = Some(name);
        } else if line.starts_with("| ") && !line.starts_with("| column") && !line.starts_with("| code") {
            let cells: Vec<&str> = line.split(" | ").map(|c| c.trim_matches(|x| x == '|' || x == ' ')).collect();
            if let (Some(c), Some(a), Some(b)) = (&cur, cells.first(), cells.get(1)) {
                out.get_mut(c).unwrap().push((a.trim_matches('`').to_string(), b.trim_matches('`').to_string()));
            }
        }
    }
    out
}

/// What differs between the documented and the declared schema, in words.
fn differences(doc: &str, decl: &str) -> Vec<String> {
    let (d, s) = (sections(doc), sections(decl));
    let mut out = Vec::new();
    for name in s.keys().filter(|k| !d.contains_key(*k)) {
        out.push(format!("`{}` is in schema.rs but not in docs/model.md", name));
    }
    for name in d.keys().filter(|k| !s.contains_key(*k)) {
        out.push(format!("`{}` is in docs/model.md but not in schema.rs", name));
    }
    for (name, cols) in &s {
        let Some(dcols) = d.get(name) else { continue };
        for (c, ty) in cols {
            match dcols.iter().find(|(x, _)| x == c) {
                None => out.push(format!("`{}.{}` is in schema.rs but not in docs/model.md", name, c)),
                Some((_, dty)) if dty != ty => out.push(format!("`{}.{}` is {} in schema.rs, {} in docs/model.md", name, c, ty, dty)),
                _ => {}
            }
        }
        for (c, _) in dcols.iter().filter(|(x, _)| !cols.iter().any(|(y, _)| y == x)) {
            out.push(format!("`{}.{}` is in docs/model.md but not in schema.rs", name, c));
        }
    }
    out
}

#[test]
fn docs_model_md_documents_exactly_the_schema() {
    let path = docs_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e));
    let b = text.find(BEGIN).unwrap_or_else(|| panic!("{}: no `{}` marker", path.display(), BEGIN));
    let b = b + text[b..].find('\n').expect("a line after the begin marker") + 1;
    let e = text.find(END).unwrap_or_else(|| panic!("{}: no `{}` marker", path.display(), END));
    let (doc, decl) = (&text[b..e], schema::markdown());
    if doc == decl {
        return;
    }
    if std::env::var_os("ROSCOPE_UPDATE_DOCS").is_some() {
        std::fs::write(&path, format!("{}{}{}", &text[..b], decl, &text[e..])).unwrap();
        eprintln!("{}: schema part rewritten", path.display());
        return;
    }
    let diffs = differences(doc, &decl);
    panic!(
        "docs/model.md and crates/model/src/schema.rs disagree:\n- {}\n(rewrite the generated part with ROSCOPE_UPDATE_DOCS=1 cargo test -p roscope-model --test schema_docs)",
        if diffs.is_empty() { "the descriptions differ".to_string() } else { diffs.join("\n- ") }
    );
}

#[test]
fn differences_name_the_missing_table_and_column() {
    let decl = schema::markdown();
    let no_table = decl.replace("#### `takes`", "#### `takes_renamed`");
    let d = differences(&no_table, &decl);
    assert!(d.contains(&"`takes` is in schema.rs but not in docs/model.md".to_string()), "{:?}", d);
    assert!(d.contains(&"`takes_renamed` is in docs/model.md but not in schema.rs".to_string()), "{:?}", d);
    let no_col = decl.replace("| `heuristic` | BIGINT |", "| `heuristics` | BIGINT |");
    let d = differences(&no_col, &decl);
    assert_eq!(
        d,
        vec!["`links.heuristic` is in schema.rs but not in docs/model.md", "`links.heuristics` is in docs/model.md but not in schema.rs"]
    );
}

#[test]
fn the_builder_emits_every_model_table_of_the_schema_with_its_columns() {
    let dir = roscope_ctf::testing::TempDir::new("schema");
    let mut w = roscope_ctf::testing::TraceWriter::new("h");
    w.class("ros2:rcl_init", &[("context_handle", roscope_ctf::testing::FieldType::U64)]);
    w.event(1, roscope_ctf::testing::Ctx { pid: 1, tid: 1, procname: "p" }, "ros2:rcl_init", &[roscope_ctf::testing::Value::U(1)]);
    w.write(dir.path());
    let mut set = roscope_ctf::TraceSet::open(&[dir.path()]).unwrap();
    let m = roscope_model::build(&mut set, Default::default(), Default::default());
    let emitted: Vec<(&str, Vec<&str>)> = m.tables.iter().map(|t| (t.name, t.cols.iter().map(|c| c.name).collect())).collect();
    let declared: Vec<(&str, Vec<&str>)> =
        TABLES.iter().filter(|t| t.origin == Origin::Model).map(|t| (t.name, t.columns.iter().map(|c| c.name).collect())).collect();
    assert_eq!(emitted, declared);
}

/// A small JSON reader (enough for the schema export): objects, arrays,
/// strings with escapes, integers.
#[derive(Debug, PartialEq)]
enum J {
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
    Str(String),
    Int(i64),
}

impl J {
    fn get(&self, k: &str) -> &J {
        match self {
            J::Obj(v) => &v.iter().find(|(x, _)| x == k).unwrap_or_else(|| panic!("no key {}", k)).1,
            _ => panic!("not an object"),
        }
    }
    fn arr(&self) -> &[J] {
        match self {
            J::Arr(v) => v,
            _ => panic!("not an array"),
        }
    }
    fn s(&self) -> &str {
        match self {
            J::Str(s) => s,
            _ => panic!("not a string"),
        }
    }
}

fn parse(b: &[u8], i: &mut usize) -> J {
    while b[*i].is_ascii_whitespace() {
        *i += 1;
    }
    match b[*i] {
        b'{' | b'[' => {
            let obj = b[*i] == b'{';
            *i += 1;
            let (mut kv, mut items) = (Vec::new(), Vec::new());
            loop {
                while b[*i].is_ascii_whitespace() || b[*i] == b',' {
                    *i += 1;
                }
                if b[*i] == b'}' || b[*i] == b']' {
                    *i += 1;
                    return if obj { J::Obj(kv) } else { J::Arr(items) };
                }
                let v = parse(b, i);
                if obj {
                    while b[*i] != b':' {
                        *i += 1;
                    }
                    *i += 1;
                    let J::Str(k) = v else { panic!("object key is not a string") };
                    kv.push((k, parse(b, i)));
                } else {
                    items.push(v);
                }
            }
        }
        b'"' => {
            let mut s = String::new();
            *i += 1;
            loop {
                match b[*i] {
                    b'"' => break,
                    b'\\' => {
                        *i += 1;
                        match b[*i] {
                            b'n' => s.push('\n'),
                            b'u' => {
                                let hex = std::str::from_utf8(&b[*i + 1..*i + 5]).unwrap();
                                s.push(char::from_u32(u32::from_str_radix(hex, 16).unwrap()).unwrap());
                                *i += 4;
                            }
                            c => s.push(c as char),
                        }
                        *i += 1;
                    }
                    _ => {
                        let n = std::str::from_utf8(&b[*i..]).unwrap().chars().next().unwrap();
                        s.push(n);
                        *i += n.len_utf8();
                    }
                }
            }
            *i += 1;
            J::Str(s)
        }
        _ => {
            let st = *i;
            while b[*i] == b'-' || b[*i].is_ascii_digit() {
                *i += 1;
            }
            J::Int(std::str::from_utf8(&b[st..*i]).unwrap().parse().unwrap())
        }
    }
}

#[test]
fn the_json_export_says_what_schema_rs_declares() {
    let text = schema::to_json();
    let mut i = 0;
    let j = parse(text.as_bytes(), &mut i);
    assert_eq!(text[i..].trim(), "", "trailing text after the JSON document");
    let tables = j.get("tables").arr();
    assert_eq!(tables.len(), TABLES.len());
    for (t, spec) in tables.iter().zip(TABLES) {
        assert_eq!(t.get("name").s(), spec.name);
        assert_eq!(t.get("origin").s(), spec.origin.name());
        assert_eq!(t.get("doc").s(), spec.doc);
        let cols: Vec<(&str, &str, &str)> =
            t.get("columns").arr().iter().map(|c| (c.get("name").s(), c.get("type").s(), c.get("doc").s())).collect();
        let want: Vec<(&str, &str, &str)> = spec.columns.iter().map(|c| (c.name, c.ty.sql(), c.doc)).collect();
        assert_eq!(cols, want);
    }
    let codes = j.get("codes").arr();
    assert_eq!(codes.len(), CODE_TABLES.len());
    for (c, spec) in codes.iter().zip(CODE_TABLES) {
        assert_eq!(c.get("name").s(), spec.name);
        let used: Vec<&str> = c.get("used_in").arr().iter().map(|u| u.s()).collect();
        assert_eq!(used, spec.used_in);
        for (v, sv) in c.get("values").arr().iter().zip(spec.values) {
            assert_eq!((v.get("code"), v.get("name").s(), v.get("doc").s()), (&J::Int(sv.code), sv.name, sv.doc));
        }
        assert_eq!(c.get("values").arr().len(), spec.values.len());
    }
}

#[test]
fn code_tables_name_columns_of_the_schema_and_their_enums_agree() {
    for c in CODE_TABLES {
        for u in c.used_in {
            let (t, col) = u.split_once('.').unwrap();
            let spec = schema::table(t).unwrap_or_else(|| panic!("{}: no table {}", c.name, t));
            assert!(spec.column(col).is_some(), "{}: no column {}", c.name, u);
        }
        let codes: Vec<i64> = c.values.iter().map(|v| v.code).collect();
        assert_eq!(codes, (0..c.values.len() as i64).collect::<Vec<_>>(), "{}: codes are not 0..n", c.name);
    }
    use schema::{CallbackKind, LinkMethod};
    assert_eq!(LinkMethod::Ros1Roscope.name(), "ros1_roscope");
    assert_eq!(CallbackKind::Subscription.code(), 1);
    assert_eq!(CallbackKind::ALL.len(), CallbackKind::TABLE.values.len());
}
