//! Arbitrary bytes as a trace's metadata file (plain TSDL text or packetized):
//! reading and parsing must return a value or an error, never panic or hang.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("roscope-fuzz-metadata-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join("metadata")
    })
}

fuzz_target!(|data: &[u8]| {
    let p = path();
    std::fs::write(p, data).unwrap();
    let mut warnings = Vec::new();
    match roscope_ctf::metadata::read_text(p, &mut warnings) {
        Ok(text) => {
            let _ = roscope_ctf::metadata::parse(&text, "fuzz/metadata");
        }
        Err(_) => {
            // Not recognised as metadata: still feed the text to the parser.
            let _ = roscope_ctf::metadata::parse(&String::from_utf8_lossy(data), "fuzz/metadata");
        }
    }
    for w in &warnings {
        let _ = w.to_string();
    }
});
