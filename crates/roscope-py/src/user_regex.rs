//! `Regex`: a user's regular expression run by Rust's `regex` crate, whose matching
//! takes time linear in the text (no backtracking: a pattern like `^(\S+\s?)+X$`
//! cannot run for minutes on a long name). Python's `roscope.regex` is its one user.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The compiled program's size limit (bytes): a pattern past it (`a{1000}{1000}`) is
/// refused when compiled instead of taking the memory.
const SIZE_LIMIT: usize = 1 << 22;

#[pyclass(module = "roscope._core", frozen)]
pub(crate) struct Regex {
    rx: regex::Regex,
}

#[pymethods]
impl Regex {
    /// Compiles `pattern`; ValueError with the engine's reason (one line) if it cannot.
    #[new]
    fn new(pattern: &str) -> PyResult<Self> {
        let rx = regex::RegexBuilder::new(pattern)
            .size_limit(SIZE_LIMIT)
            .dfa_size_limit(SIZE_LIMIT)
            .build()
            .map_err(|e| PyValueError::new_err(reason(&e)))?;
        Ok(Regex { rx })
    }

    /// Whether the pattern matches anywhere in `text` (like Python's `re.search`).
    fn search(&self, text: &str) -> bool {
        self.rx.is_match(text)
    }

    /// `search` of each text, in order.
    fn mask(&self, py: Python<'_>, texts: Vec<String>) -> Vec<bool> {
        py.allow_threads(|| texts.iter().map(|t| self.rx.is_match(t)).collect())
    }

    #[getter]
    fn pattern(&self) -> &str {
        self.rx.as_str()
    }
}

/// The engine's error as one line: its last line says what is wrong (the lines before
/// draw the pattern with a caret).
fn reason(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(text) => {
            let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(text);
            last.trim().trim_start_matches("error: ").to_string()
        }
        regex::Error::CompiledTooBig(n) => format!("the compiled pattern is larger than {n} bytes"),
        other => other.to_string().lines().next().unwrap_or_default().to_string(),
    }
}
