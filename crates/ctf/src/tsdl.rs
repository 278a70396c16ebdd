//! TSDL (CTF 1.8 metadata language) lexer and parser, producing an AST.
//!
//! Only syntax lives here; `types.rs` resolves the AST into concrete layouts.

use crate::error::{CtfError, Result};

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Ident(String),
    Int(i128),
    Str(String),
    Punct(&'static str),
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    pub line: u32,
}

const PUNCTS: &[&str] = &["...", ":=", "{", "}", "[", "]", "(", ")", ";", ",", "=", "<", ">", ".", ":", "-", "+", "*"];

pub fn lex(src: &str) -> std::result::Result<Vec<Token>, (u32, String)> {
    let b = src.as_bytes();
    let mut i = 0usize;
    let mut line = 1u32;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() || c == 0 {
            i += 1;
            continue;
        }
        if c == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            let start_line = line;
            i += 2;
            loop {
                if i + 1 >= b.len() {
                    return Err((start_line, "unterminated comment".into()));
                }
                if b[i] == b'\n' {
                    line += 1;
                }
                if b[i] == b'*' && b[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
            continue;
        }
        if c == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(src[s..i].to_string()), line });
            continue;
        }
        if c.is_ascii_digit() {
            let s = i;
            let (radix, digits_start) = if c == b'0' && i + 1 < b.len() && (b[i + 1] == b'x' || b[i + 1] == b'X') {
                (16, i + 2)
            } else if c == b'0' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
                (8, i + 1)
            } else {
                (10, i)
            };
            i = digits_start;
            while i < b.len() && b[i].is_ascii_hexdigit() {
                i += 1;
            }
            let digits = &src[digits_start..i];
            // integer suffixes (U, L, UL, ULL...)
            while i < b.len() && (b[i] == b'u' || b[i] == b'U' || b[i] == b'l' || b[i] == b'L') {
                i += 1;
            }
            let v = i128::from_str_radix(digits, radix).map_err(|_| (line, format!("bad integer literal '{}'", &src[s..i])))?;
            out.push(Token { tok: Tok::Int(v), line });
            continue;
        }
        if c == b'"' {
            i += 1;
            let mut s = Vec::new();
            loop {
                if i >= b.len() {
                    return Err((line, "unterminated string literal".into()));
                }
                match b[i] {
                    b'"' => {
                        i += 1;
                        break;
                    }
                    b'\\' if i + 1 < b.len() => {
                        let e = b[i + 1];
                        s.push(match e {
                            b'n' => b'\n',
                            b't' => b'\t',
                            b'r' => b'\r',
                            b'0' => 0,
                            other => other,
                        });
                        i += 2;
                    }
                    b'\n' => {
                        line += 1;
                        s.push(b'\n');
                        i += 1;
                    }
                    other => {
                        s.push(other);
                        i += 1;
                    }
                }
            }
            out.push(Token { tok: Tok::Str(String::from_utf8_lossy(&s).into_owned()), line });
            continue;
        }
        if c == b'\'' {
            // character constant: 'c'
            if i + 2 < b.len() && b[i + 2] == b'\'' {
                out.push(Token { tok: Tok::Int(b[i + 1] as i128), line });
                i += 3;
                continue;
            }
            return Err((line, "bad character constant".into()));
        }
        let mut matched = false;
        for p in PUNCTS {
            if src[i..].starts_with(p) {
                out.push(Token { tok: Tok::Punct(p), line });
                i += p.len();
                matched = true;
                break;
            }
        }
        if !matched {
            // The text comes from a lossy UTF-8 decoding: name the character
            // itself (escaped), not its first byte.
            let what = match src.get(i..).and_then(|r| r.chars().next()) {
                Some('\u{FFFD}') => "bytes that are not UTF-8 text".to_string(),
                Some(ch) => format!("character {:?}", ch),
                None => format!("byte 0x{:02x}", c),
            };
            return Err((line, format!("unexpected {}", what)));
        }
    }
    Ok(out)
}

/// A type specifier as written.
#[derive(Debug, Clone)]
pub enum TypeSpec {
    Integer(Vec<Attr>),
    Float(Vec<Attr>),
    String(Vec<Attr>),
    Enum { name: Option<String>, container: Option<Box<TypeSpec>>, mappings: Option<Vec<EnumMapping>> },
    Struct { name: Option<String>, fields: Option<Vec<FieldDecl>>, align: Option<u64> },
    Variant { name: Option<String>, tag: Option<String>, options: Option<Vec<FieldDecl>> },
    Named(String),
}

#[derive(Debug, Clone)]
pub struct Attr {
    pub key: String,
    pub value: Value,
    pub line: u32,
}

#[derive(Debug, Clone)]
pub enum Value {
    Int(i128),
    Str(String),
    Path(String), // identifiers joined by '.'
    Type(TypeSpec),
}

#[derive(Debug, Clone)]
pub struct EnumMapping {
    pub label: String,
    pub range: Option<(i128, i128)>, // None: implicit (previous + 1)
}

#[derive(Debug, Clone)]
pub enum Dim {
    Fixed(u64),
    Ref(String),
}

#[derive(Debug, Clone)]
pub struct FieldDecl {
    pub ty: TypeSpec,
    pub name: String,
    pub dims: Vec<Dim>,
    pub line: u32,
}

#[derive(Debug, Clone)]
pub enum Decl {
    Block {
        kind: String,
        attrs: Vec<Attr>,
        line: u32,
    },
    TypeAlias {
        ty: TypeSpec,
        dims: Vec<Dim>,
        name: String,
        line: u32,
    },
    /// A named struct/enum/variant declared at top level (`struct x {...};`).
    TypeDef {
        ty: TypeSpec,
        line: u32,
    },
}

pub struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
    file: String,
    /// Type specifiers being parsed, one inside the other.
    depth: u32,
}

/// Deepest nesting of type specifiers, and most array dimensions of one
/// field: beyond these, metadata is refused rather than overflowing the stack
/// (here, or later when types are resolved, linked and decoded).
const MAX_TYPE_DEPTH: u32 = 32;
const MAX_DIMS: usize = 8;

type PResult<T> = std::result::Result<T, CtfError>;

impl<'a> Parser<'a> {
    pub fn new(toks: &'a [Token], file: &str) -> Self {
        Parser { toks, pos: 0, file: file.to_string(), depth: 0 }
    }

    fn line(&self) -> u32 {
        self.toks.get(self.pos).or_else(|| self.toks.last()).map(|t| t.line).unwrap_or(0)
    }

    fn err<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(CtfError::Metadata { file: self.file.clone(), line: self.line(), msg: msg.into() })
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }
    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(q)) if q == s)
    }

    fn expect_punct(&mut self, p: &str) -> PResult<()> {
        if self.is_punct(p) {
            self.pos += 1;
            Ok(())
        } else {
            let got = self.describe();
            self.err(format!("expected '{}', found {}", p, got))
        }
    }

    fn describe(&self) -> String {
        match self.peek() {
            None => "end of metadata".into(),
            Some(Tok::Ident(s)) => format!("'{}'", s),
            Some(Tok::Int(v)) => format!("'{}'", v),
            Some(Tok::Str(s)) => format!("\"{}\"", s),
            Some(Tok::Punct(p)) => format!("'{}'", p),
        }
    }

    fn ident(&mut self) -> PResult<String> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            _ => {
                let got = self.describe();
                self.err(format!("expected an identifier, found {}", got))
            }
        }
    }

    fn signed_int(&mut self) -> PResult<i128> {
        let neg = if self.is_punct("-") {
            self.pos += 1;
            true
        } else {
            if self.is_punct("+") {
                self.pos += 1;
            }
            false
        };
        match self.peek() {
            Some(Tok::Int(v)) => {
                let v = *v;
                self.pos += 1;
                Ok(if neg { -v } else { v })
            }
            _ => {
                let got = self.describe();
                self.err(format!("expected an integer, found {}", got))
            }
        }
    }

    pub fn parse_all(&mut self) -> PResult<Vec<Decl>> {
        let mut decls = Vec::new();
        while self.peek().is_some() {
            if self.is_punct(";") {
                self.pos += 1;
                continue;
            }
            decls.push(self.decl()?);
        }
        Ok(decls)
    }

    fn decl(&mut self) -> PResult<Decl> {
        let line = self.line();
        match self.peek() {
            Some(Tok::Ident(k)) => {
                let k = k.clone();
                match k.as_str() {
                    "trace" | "env" | "clock" | "stream" | "event" | "callsite" => {
                        if matches!(self.peek_at(1), Some(Tok::Punct("{"))) {
                            self.pos += 1;
                            let attrs = self.block_body()?;
                            self.expect_punct(";")?;
                            return Ok(Decl::Block { kind: k, attrs, line });
                        }
                        self.err(format!("expected '{{' after '{}'", k))
                    }
                    "typealias" => {
                        self.pos += 1;
                        let ty = self.type_spec()?;
                        self.expect_punct(":=")?;
                        // alias name: one or more identifiers, optionally with dims
                        let mut parts = Vec::new();
                        while let Some(Tok::Ident(s)) = self.peek() {
                            parts.push(s.clone());
                            self.pos += 1;
                        }
                        if self.is_punct("*") {
                            return self.err("pointer type aliases are not supported");
                        }
                        if parts.is_empty() {
                            return self.err("expected a type alias name after ':='");
                        }
                        let dims = self.dims()?;
                        self.expect_punct(";")?;
                        Ok(Decl::TypeAlias { ty, dims, name: parts.join(" "), line })
                    }
                    "typedef" => {
                        self.pos += 1;
                        let ty = self.type_spec()?;
                        let mut parts = Vec::new();
                        while let Some(Tok::Ident(s)) = self.peek() {
                            parts.push(s.clone());
                            self.pos += 1;
                        }
                        let name = parts.pop().ok_or(()).or_else(|_| self.err("typedef without a name"))?;
                        let dims = self.dims()?;
                        self.expect_punct(";")?;
                        Ok(Decl::TypeAlias { ty, dims, name, line })
                    }
                    "struct" | "enum" | "variant" => {
                        let ty = self.type_spec()?;
                        self.expect_punct(";")?;
                        Ok(Decl::TypeDef { ty, line })
                    }
                    other => self.err(format!("unexpected '{}' at top level", other)),
                }
            }
            _ => {
                let got = self.describe();
                self.err(format!("unexpected {} at top level", got))
            }
        }
    }

    /// `{ key = value; key := type; type name; ... }`
    fn block_body(&mut self) -> PResult<Vec<Attr>> {
        self.expect_punct("{")?;
        let mut attrs = Vec::new();
        while !self.is_punct("}") {
            if self.peek().is_none() {
                return self.err("unexpected end of metadata inside a block");
            }
            if self.is_punct(";") {
                self.pos += 1;
                continue;
            }
            let line = self.line();
            let mut key = self.ident()?;
            while self.is_punct(".") {
                self.pos += 1;
                key.push('.');
                key.push_str(&self.ident()?);
            }
            if self.is_punct(":=") {
                self.pos += 1;
                let ty = self.type_spec()?;
                attrs.push(Attr { key, value: Value::Type(ty), line });
            } else if self.is_punct("=") {
                self.pos += 1;
                let value = self.value()?;
                attrs.push(Attr { key, value, line });
            } else {
                let got = self.describe();
                return self.err(format!("expected '=' or ':=' after '{}', found {}", key, got));
            }
            self.expect_punct(";")?;
        }
        self.expect_punct("}")?;
        Ok(attrs)
    }

    fn value(&mut self) -> PResult<Value> {
        match self.peek() {
            Some(Tok::Str(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok(Value::Str(s))
            }
            Some(Tok::Int(_)) | Some(Tok::Punct("-")) | Some(Tok::Punct("+")) => Ok(Value::Int(self.signed_int()?)),
            Some(Tok::Ident(_)) => {
                let mut p = self.ident()?;
                while self.is_punct(".") {
                    self.pos += 1;
                    p.push('.');
                    p.push_str(&self.ident()?);
                }
                Ok(Value::Path(p))
            }
            _ => {
                let got = self.describe();
                self.err(format!("expected a value, found {}", got))
            }
        }
    }

    fn attr_list(&mut self) -> PResult<Vec<Attr>> {
        self.expect_punct("{")?;
        let mut attrs = Vec::new();
        while !self.is_punct("}") {
            if self.peek().is_none() {
                return self.err("unexpected end of metadata in attribute list");
            }
            if self.is_punct(";") {
                self.pos += 1;
                continue;
            }
            let line = self.line();
            let key = self.ident()?;
            self.expect_punct("=")?;
            let value = self.value()?;
            attrs.push(Attr { key, value, line });
            if !self.is_punct("}") {
                self.expect_punct(";")?;
            }
        }
        self.expect_punct("}")?;
        Ok(attrs)
    }

    fn type_spec(&mut self) -> PResult<TypeSpec> {
        if self.depth >= MAX_TYPE_DEPTH {
            return self.err(format!("types nested more than {} deep", MAX_TYPE_DEPTH));
        }
        self.depth += 1;
        let r = self.type_spec_inner();
        self.depth -= 1;
        r
    }

    fn type_spec_inner(&mut self) -> PResult<TypeSpec> {
        match self.peek() {
            Some(Tok::Ident(k)) => {
                let k = k.clone();
                match k.as_str() {
                    "integer" => {
                        self.pos += 1;
                        Ok(TypeSpec::Integer(self.attr_list()?))
                    }
                    "floating_point" => {
                        self.pos += 1;
                        Ok(TypeSpec::Float(self.attr_list()?))
                    }
                    "string" => {
                        self.pos += 1;
                        let attrs = if self.is_punct("{") { self.attr_list()? } else { Vec::new() };
                        Ok(TypeSpec::String(attrs))
                    }
                    "enum" => {
                        self.pos += 1;
                        let name = if let Some(Tok::Ident(_)) = self.peek() { Some(self.ident()?) } else { None };
                        let container = if self.is_punct(":") {
                            self.pos += 1;
                            Some(Box::new(self.type_spec()?))
                        } else {
                            None
                        };
                        let mappings = if self.is_punct("{") { Some(self.enum_body()?) } else { None };
                        if name.is_none() && mappings.is_none() {
                            return self.err("enum without a name or a body");
                        }
                        Ok(TypeSpec::Enum { name, container, mappings })
                    }
                    "struct" => {
                        self.pos += 1;
                        let name = if let Some(Tok::Ident(_)) = self.peek() { Some(self.ident()?) } else { None };
                        let fields = if self.is_punct("{") { Some(self.field_list()?) } else { None };
                        let align = if self.is_ident("align") {
                            self.pos += 1;
                            self.expect_punct("(")?;
                            let a = self.signed_int()?;
                            self.expect_punct(")")?;
                            if a <= 0 || (a & (a - 1)) != 0 {
                                return self.err(format!("struct alignment {} is not a power of two", a));
                            }
                            Some(a as u64)
                        } else {
                            None
                        };
                        if name.is_none() && fields.is_none() {
                            return self.err("struct without a name or a body");
                        }
                        Ok(TypeSpec::Struct { name, fields, align })
                    }
                    "variant" => {
                        self.pos += 1;
                        let name = if let Some(Tok::Ident(_)) = self.peek() { Some(self.ident()?) } else { None };
                        let tag = if self.is_punct("<") {
                            self.pos += 1;
                            let mut t = self.ident()?;
                            while self.is_punct(".") {
                                self.pos += 1;
                                t.push('.');
                                t.push_str(&self.ident()?);
                            }
                            self.expect_punct(">")?;
                            Some(t)
                        } else {
                            None
                        };
                        let options = if self.is_punct("{") { Some(self.field_list()?) } else { None };
                        if name.is_none() && options.is_none() {
                            return self.err("variant without a name or a body");
                        }
                        Ok(TypeSpec::Variant { name, tag, options })
                    }
                    _ => {
                        // a type name: identifiers up to (but excluding) the declarator name
                        let mut parts = vec![self.ident()?];
                        while let (Some(Tok::Ident(s)), Some(next)) = (self.peek(), self.peek_at(1)) {
                            if matches!(next, Tok::Ident(_)) {
                                parts.push(s.clone());
                                self.pos += 1;
                            } else {
                                break;
                            }
                        }
                        Ok(TypeSpec::Named(parts.join(" ")))
                    }
                }
            }
            _ => {
                let got = self.describe();
                self.err(format!("expected a type, found {}", got))
            }
        }
    }

    fn enum_body(&mut self) -> PResult<Vec<EnumMapping>> {
        self.expect_punct("{")?;
        let mut maps = Vec::new();
        while !self.is_punct("}") {
            let label = match self.peek() {
                Some(Tok::Ident(s)) | Some(Tok::Str(s)) => {
                    let s = s.clone();
                    self.pos += 1;
                    s
                }
                _ => {
                    let got = self.describe();
                    return self.err(format!("expected an enum label, found {}", got));
                }
            };
            let range = if self.is_punct("=") {
                self.pos += 1;
                let a = self.signed_int()?;
                let b = if self.is_punct("...") {
                    self.pos += 1;
                    self.signed_int()?
                } else {
                    a
                };
                Some((a.min(b), a.max(b)))
            } else {
                None
            };
            maps.push(EnumMapping { label, range });
            if self.is_punct(",") {
                self.pos += 1;
            } else if !self.is_punct("}") {
                let got = self.describe();
                return self.err(format!("expected ',' or '}}' in enum, found {}", got));
            }
        }
        self.expect_punct("}")?;
        Ok(maps)
    }

    fn field_list(&mut self) -> PResult<Vec<FieldDecl>> {
        self.expect_punct("{")?;
        let mut fields = Vec::new();
        while !self.is_punct("}") {
            if self.peek().is_none() {
                return self.err("unexpected end of metadata in a structure");
            }
            if self.is_punct(";") {
                self.pos += 1;
                continue;
            }
            let line = self.line();
            if self.is_ident("typealias") || self.is_ident("typedef") {
                return self.err("scoped type aliases inside structures are not supported");
            }
            let ty = self.type_spec()?;
            let name = self.ident()?;
            let dims = self.dims()?;
            // several declarators: `int a, b;`
            fields.push(FieldDecl { ty: ty.clone(), name, dims, line });
            while self.is_punct(",") {
                self.pos += 1;
                let name = self.ident()?;
                let dims = self.dims()?;
                fields.push(FieldDecl { ty: ty.clone(), name, dims, line });
            }
            self.expect_punct(";")?;
        }
        self.expect_punct("}")?;
        Ok(fields)
    }

    fn dims(&mut self) -> PResult<Vec<Dim>> {
        let mut dims = Vec::new();
        while self.is_punct("[") {
            if dims.len() >= MAX_DIMS {
                return self.err(format!("more than {} array dimensions", MAX_DIMS));
            }
            self.pos += 1;
            let d = match self.peek() {
                Some(Tok::Int(v)) => {
                    let v = *v;
                    self.pos += 1;
                    if v < 0 || v > u32::MAX as i128 {
                        return self.err(format!("array length {} out of range", v));
                    }
                    Dim::Fixed(v as u64)
                }
                Some(Tok::Ident(_)) => {
                    let mut p = self.ident()?;
                    while self.is_punct(".") {
                        self.pos += 1;
                        p.push('.');
                        p.push_str(&self.ident()?);
                    }
                    Dim::Ref(p)
                }
                _ => {
                    let got = self.describe();
                    return self.err(format!("expected an array length, found {}", got));
                }
            };
            self.expect_punct("]")?;
            dims.push(d);
        }
        Ok(dims)
    }
}

pub fn parse(src: &str, file: &str) -> Result<Vec<Decl>> {
    let toks = lex(src).map_err(|(line, msg)| CtfError::Metadata { file: file.to_string(), line, msg })?;
    Parser::new(&toks, file).parse_all()
}
