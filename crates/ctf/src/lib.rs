//! roscope-ctf: an exact and fast reader for CTF 1.8 traces as LTTng 2.10-2.13
//! writes them (user space and kernel), with streaming, time-ordered merging of
//! every stream of one or several traces.
//!
//! - `tsdl`: the metadata language's lexer and parser (AST);
//! - `types`: field types resolved from it, sequences and variants linked;
//! - `metadata`: reading a trace's metadata (text or packetized);
//! - `stream`: decoding one stream file, packet by packet, into value tapes;
//! - `reader`: finding traces and merging their streams in time order;
//! - `json`: the `roscope dump` JSON-lines writer;
//! - `live`: a client of LTTng's live viewer protocol (`roscope watch --source live`);
//! - `summary`: the one-pass summary behind `roscope info`;
//! - `testing` (feature `testing`): hand-made traces for tests.

pub mod columns;
pub mod error;
pub mod json;
pub mod live;
pub mod metadata;
pub mod meter;
pub mod reader;
pub mod stream;
pub mod summary;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tsdl;
pub mod types;

pub use error::{CtfError, Result, Warning};
pub use reader::TraceSet;
pub use stream::Val;
