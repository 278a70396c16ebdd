//! Errors and warnings. Every message names the file, and the line or byte
//! offset where that is known, so a user can find what is wrong.

use std::fmt;

#[derive(Debug, Clone)]
pub enum CtfError {
    Io { path: String, msg: String },
    Metadata { file: String, line: u32, msg: String },
    Decode { file: String, offset: u64, msg: String },
    NotFound(String),
}

impl fmt::Display for CtfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CtfError::Io { path, msg } => write!(f, "{}: {}", path, msg),
            CtfError::Metadata { file, line, msg } => write!(f, "{}:{}: invalid metadata: {}", file, line, msg),
            CtfError::Decode { file, offset, msg } => write!(f, "{}: at byte {}: {}", file, offset, msg),
            CtfError::NotFound(msg) => write!(f, "{}", msg),
        }
    }
}

impl std::error::Error for CtfError {}

pub type Result<T> = std::result::Result<T, CtfError>;

/// Something that was wrong with the input but did not stop the reading of
/// everything else.
#[derive(Debug, Clone)]
pub struct Warning {
    pub file: String,
    pub offset: Option<u64>,
    pub msg: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "{}: at byte {}: {}", self.file, o, self.msg),
            None => write!(f, "{}: {}", self.file, self.msg),
        }
    }
}
