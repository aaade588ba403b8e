//! The JSON reader of every request body (`parseUplink`, `processBurstJson`).
//!
//! One reading of a body for every route, by RFC 8259 and three rules of this
//! service (docs/http-api.md, "Readings and rejections"):
//!
//! * **A member given twice** in one object is found wherever it is, ignored
//!   members and nested values included, and is never first- or last-wins: the
//!   reader stops with a [`Fault`] whose JSON Pointer names the member
//!   (`member "readings" appears twice (at /readings)`). The burst reader turns a
//!   fault inside one of its reading elements into that reading's rejection
//!   (`burst.rs`); anywhere else it is the body's `invalid_json`.
//! * **Numbers keep their text** ([`Json::Number`]): only JSON's grammar is checked
//!   here, so `1e400` in a member nobody reads costs nothing, and a member that is
//!   read is converted by [`number_scalar`] — out of f64 range it is ±infinity,
//!   which the field's own rule rejects (`invalid_seq`, `invalid_fill_pct`, ...).
//! * **A lone UTF-16 surrogate escape** (`"\ud800"`, or a high one not followed
//!   by a low one) is not a character: `invalid_json` saying so, with the line and
//!   column of its `\u`.
//!
//! Nesting is limited to [`MAX_DEPTH`] levels (serde_json's limit), so a deep body
//! is a clean error, never a stack overflow in Wasm; the body must be UTF-8.
//!
//! Why not serde_json, which the crate keeps for writing JSON: its lexer refuses an
//! out-of-range number wherever it stands (the whole request fails) unless the
//! `arbitrary_precision` feature is on, and that feature is crate-wide: every
//! number then reaches every visitor (the core's `Scalar`, `RawReading`) as a map
//! with a private key and an allocated string. serde_json also skips ignored
//! values without looking at member names or escapes. docs/benchmarks.md has this
//! reader's figures against the serde_json paths it replaced.

use super::error::Error;
use super::reading::Scalar;
use std::borrow::Cow;
use std::collections::BTreeSet;

/// Deepest nesting of arrays and objects, the outermost one counted (serde_json's
/// limit, and far below what the Wasm stack holds).
pub(crate) const MAX_DEPTH: usize = 128;

/// Members an object may have before its names are looked up in a tree instead of
/// scanned (keeps an object of 100 000 members from costing n² comparisons).
const SCANNED_NAMES: usize = 16;

/// Longest member name or pointer segment quoted whole in a message.
const QUOTED_CHARS: usize = 64;

/// A JSON value borrowed from the body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    /// The number as written in the body: JSON's grammar checked, its range not.
    Number(&'a str),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
}

/// An object's members in body order; no name appears twice (the reader refuses it).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Object<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> Object<'a> {
    /// The member named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Json<'a>> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Whether the object has no members.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> Json<'a> {
    pub(crate) fn as_object(&self) -> Option<&Object<'a>> {
        match self {
            Json::Object(m) => Some(m),
            _ => None,
        }
    }

    pub(crate) fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(v) => Some(v),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// An integer number within i64 (`41`, not `41.0` or `-0`), as serde_json's
    /// `Value::as_i64` reads it.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Number(text) => match number_scalar(text) {
                Scalar::Int(n) => Some(n),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A number's text (grammar already checked) as the core's raw scalar, read as
/// serde_json reads numbers: an integer within i64 is `Int`, any other number the
/// nearest f64, correctly rounded — `-0` is `-0.0`, an integer beyond i64 a float,
/// `1e-400` (below the smallest double) `0.0` as in `JSON.parse`, and `1e400`
/// (beyond the largest) infinity, which every field's rule rejects. A number whose
/// text has a non-zero fraction but whose f64 is whole (`0.99999999999999999`,
/// `1e-400`) is [`Scalar::Fractional`]: integrality is decided by the text, so a
/// `seq` of it is refused instead of keyed as its rounded neighbour.
pub(crate) fn number_scalar(text: &str) -> Scalar<'static> {
    // A fraction or an exponent stops the integer parse at once.
    match text.parse::<i64>() {
        Ok(n) if n != 0 || !text.starts_with('-') => Scalar::Int(n),
        _ => {
            // The grammar was checked, so the text parses; NaN is unreachable.
            let f = text.parse::<f64>().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && !is_whole(text) {
                Scalar::Fractional(f)
            } else {
                Scalar::Float(f)
            }
        }
    }
}

/// Whether a JSON number's text (grammar already checked) is a whole number,
/// exactly: every non-zero digit of its mantissa stands left of the decimal point
/// once the exponent has moved it (`1.0`, `1e2`, `10E-1`, `-0` are whole;
/// `0.99999999999999999`, `1e-400`, `0.5e1` is whole, `0.05e1` is not).
fn is_whole(text: &str) -> bool {
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], &unsigned[at + 1..]),
        None => (unsigned, ""),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The position (digits after the first of `int`) of the last non-zero digit.
    let nonzero = |digits: &str| digits.bytes().rposition(|b| b != b'0');
    let Some(last) = nonzero(frac)
        .map(|at| int.len() + at)
        .or_else(|| nonzero(int))
    else {
        return true; // zero
    };
    // Digits left of the point after the shift: int.len() + exponent, saturating
    // (an exponent of any length is valid JSON).
    let (negative, digits) = match exponent.as_bytes().first() {
        Some(b'-') => (true, &exponent[1..]),
        Some(b'+') => (false, &exponent[1..]),
        _ => (false, exponent),
    };
    let magnitude = digits.bytes().fold(0i64, |acc, d| {
        acc.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    let shift = if negative { -magnitude } else { magnitude };
    (last as i64) < (int.len() as i64).saturating_add(shift)
}

/// Why a body is not JSON this service reads, and where. Boxed: every step of the
/// reader returns a `Result` with it, which stays two words wide.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fault(Box<Failure>);

#[derive(Debug, Clone, PartialEq)]
struct Failure {
    what: String,
    /// Byte offset in the body (for the line and column).
    at: usize,
    /// A member given twice: the JSON Pointer segments from that member outwards.
    /// `None` for every other fault.
    path: Option<Vec<String>>,
}

impl Fault {
    fn new(what: impl Into<String>, at: usize) -> Fault {
        Fault(Box::new(Failure {
            what: what.into(),
            at,
            path: None,
        }))
    }

    fn duplicate(name: &str, at: usize) -> Fault {
        Fault(Box::new(Failure {
            what: format!("member {} appears twice", quoted(name)),
            at,
            path: Some(vec![name.to_owned()]),
        }))
    }

    /// A member given twice (not a syntax error).
    pub(crate) fn is_duplicate(&self) -> bool {
        self.0.path.is_some()
    }

    /// A member given twice in the object the fault was caught on, not deeper.
    pub(crate) fn is_in_this_object(&self) -> bool {
        self.0.path.as_ref().is_some_and(|p| p.len() == 1)
    }

    /// Adds the segment of the enclosing array or object to a duplicate's path.
    pub(crate) fn within(mut self, segment: impl ToString) -> Fault {
        if let Some(path) = &mut self.0.path {
            path.push(segment.to_string());
        }
        self
    }

    /// What is wrong, without the place.
    pub(crate) fn what(&self) -> &str {
        &self.0.what
    }

    /// The whole message: what, then the JSON Pointer of a member given twice, or
    /// the line and column in `body` of anything else.
    pub(crate) fn describe(&self, body: &[u8]) -> String {
        let Failure { what, at, path } = &*self.0;
        match path {
            Some(path) => {
                let mut pointer = String::new();
                for segment in path.iter().rev() {
                    pointer.push('/');
                    let segment = segment.replace('~', "~0").replace('/', "~1");
                    pointer.push_str(&shortened(&segment));
                }
                format!("{what} (at {pointer})")
            }
            None => {
                let (line, column) = line_column(body, *at);
                format!("{what} at line {line} column {column}")
            }
        }
    }

    /// The fault as the body's `invalid_json`.
    pub(crate) fn into_error(self, body: &[u8]) -> Error {
        Error::InvalidJson(self.describe(body))
    }
}

/// A member name for a message: JSON-quoted (so it cannot break a log line),
/// shortened when long.
fn quoted(name: &str) -> String {
    serde_json::to_string(&shortened(name)).unwrap_or_default()
}

fn shortened(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
        None => Cow::Borrowed(s),
    }
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_column(body: &[u8], at: usize) -> (usize, usize) {
    let before = &body[..at.min(body.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    // UTF-8 continuation bytes (0b10xx_xxxx) do not start a character.
    let column = before[line_start..]
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count()
        + 1;
    (line, column)
}

/// Reads `body` as one JSON text with `read`, then checks that nothing follows.
///
/// # Errors
/// [`Error::InvalidJson`] describing the first [`Fault`].
pub(crate) fn read<'a, T>(
    body: &'a [u8],
    read: impl FnOnce(&mut Reader<'a>) -> Result<T, Fault>,
) -> Result<T, Error> {
    // RFC 8259 §8.1: senders must not add a byte order mark; a parser may ignore
    // one. This service refuses it, as `JSON.parse` and serde_json do, but says
    // what it is instead of "a value is expected at line 1 column 1".
    if body.starts_with(b"\xEF\xBB\xBF") {
        return Err(Error::InvalidJson(
            "the body starts with a UTF-8 byte order mark (EF BB BF); send JSON without it".into(),
        ));
    }
    let run = |r: &mut Reader<'a>| {
        let value = read(r)?;
        r.end()?;
        Ok(value)
    };
    Reader::new(body)
        .and_then(|mut r| run(&mut r))
        .map_err(|f: Fault| f.into_error(body))
}

/// One member of an object body ([`read_object`]): its name, its value, and the
/// value's text as written (for a message that shows what was sent).
// `read_object` serves the JavaScript API (`readObject`, src/wasm/body.rs) and its tests.
#[cfg_attr(not(any(target_arch = "wasm32", test)), allow(dead_code))]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member<'a> {
    pub name: Cow<'a, str>,
    pub value: Json<'a>,
    pub text: &'a str,
}

/// Reads a body that must be a JSON object of no other members than `members`, none
/// given twice: `Ok(Ok(members))` in body order, `Ok(Err(why))` when it is JSON of
/// another shape (not an object, an unknown member, a member given twice in it),
/// which the caller answers with its own code.
///
/// # Errors
/// [`Error::InvalidJson`] when the body is not JSON this service reads (the rules of
/// [`read`], a member given twice deeper in it included).
#[cfg_attr(not(any(target_arch = "wasm32", test)), allow(dead_code))]
pub(crate) fn read_object<'a>(
    body: &'a [u8],
    members: &[&str],
) -> Result<Result<Vec<Member<'a>>, String>, Error> {
    let list = members.join(", ");
    read(body, |r| {
        if r.peek() != Some(b'{') {
            r.skip()?;
            return Ok(Err(format!(
                "the body must be a JSON object with the members {list}"
            )));
        }
        let start = r.mark();
        let mut got = Vec::new();
        let mut unknown = None;
        let read = r.object(|r, name| {
            r.peek();
            let from = r.pos;
            let value = r.value()?;
            if unknown.is_none() && !members.contains(&name.as_ref()) {
                unknown = Some(format!(
                    "unknown member {}; the members are {list}",
                    quoted(&name)
                ));
            }
            got.push(Member {
                name,
                value,
                text: r.text[from..r.pos].trim_end(),
            });
            Ok(())
        });
        match read {
            Ok(()) => Ok(unknown.map_or(Ok(got), Err)),
            // Given twice in this object: the rest of the body must still be JSON.
            Err(f) if f.is_in_this_object() => {
                r.again(start, Reader::skip)?;
                Ok(Err(f.what().to_owned()))
            }
            Err(f) => Err(f),
        }
    })
}

/// Where a reader stands, to read one value again (see [`Reader::again`]).
pub(crate) struct Mark {
    pos: usize,
    depth: usize,
    names: usize,
}

/// A pull reader over a UTF-8 body: the caller asks for the value it expects.
pub(crate) struct Reader<'a> {
    text: &'a str,
    pos: usize,
    depth: usize,
    /// The member names of the objects being read, innermost last.
    names: Vec<Cow<'a, str>>,
    /// False while [`Reader::again`] re-reads a value already known to hold a
    /// member twice.
    check_names: bool,
}

impl<'a> Reader<'a> {
    /// # Errors
    /// A [`Fault`] at the first byte that is not UTF-8.
    pub(crate) fn new(body: &'a [u8]) -> Result<Reader<'a>, Fault> {
        let text = std::str::from_utf8(body).map_err(|e| {
            let at = e.valid_up_to();
            let byte = body.get(at).copied().unwrap_or_default();
            Fault::new(format!("byte 0x{byte:02x} is not UTF-8"), at)
        })?;
        Ok(Reader {
            text,
            pos: 0,
            depth: 0,
            names: Vec::new(),
            check_names: true,
        })
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn fault(&self, what: &str) -> Fault {
        let what = if self.pos >= self.text.len() {
            format!("the body ends where {what}")
        } else {
            what.to_owned()
        };
        Fault::new(what, self.pos)
    }

    /// The next byte after white space, not consumed.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = bytes.get(self.pos) {
            self.pos += 1;
        }
        bytes.get(self.pos).copied()
    }

    fn end(&mut self) -> Result<(), Fault> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.fault("characters follow the JSON value")),
        }
    }

    /// Where the reader stands.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            pos: self.pos,
            depth: self.depth,
            names: self.names.len(),
        }
    }

    /// Reads the value at `mark` again with `read`, not looking for members given
    /// twice: its other faults still count.
    pub(crate) fn again<T>(
        &mut self,
        mark: Mark,
        read: impl FnOnce(&mut Self) -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        self.pos = mark.pos;
        self.depth = mark.depth;
        self.names.truncate(mark.names);
        self.check_names = false;
        let value = read(self);
        self.check_names = true;
        value
    }

    /// Any value, as a tree.
    pub(crate) fn value(&mut self) -> Result<Json<'a>, Fault> {
        match self.peek() {
            Some(b'{') => {
                let mut members = Vec::new();
                self.object(|r, name| {
                    members.push((name, r.value()?));
                    Ok(())
                })?;
                Ok(Json::Object(Object(members)))
            }
            Some(b'[') => {
                let mut items = Vec::new();
                self.array(|r, _| {
                    items.push(r.value()?);
                    Ok(())
                })?;
                Ok(Json::Array(items))
            }
            Some(b'"') => self.string().map(Json::Str),
            _ => self.scalar(),
        }
    }

    /// Any value, read as carefully as [`Reader::value`] and dropped.
    pub(crate) fn skip(&mut self) -> Result<(), Fault> {
        match self.peek() {
            Some(b'{') => self.object(|r, _| r.skip()),
            Some(b'[') => self.array(|r, _| r.skip()),
            Some(b'"') => self.skip_string(),
            _ => self.scalar().map(drop),
        }
    }

    /// A number, `true`, `false` or `null`.
    fn scalar(&mut self) -> Result<Json<'a>, Fault> {
        let literal = |r: &mut Self, word: &str, value| {
            if r.text[r.pos..].starts_with(word) {
                r.pos += word.len();
                Ok(value)
            } else {
                Err(r.fault("a value is expected"))
            }
        };
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number().map(Json::Number),
            Some(b't') => literal(self, "true", Json::Bool(true)),
            Some(b'f') => literal(self, "false", Json::Bool(false)),
            Some(b'n') => literal(self, "null", Json::Null),
            _ => Err(self.fault("a value is expected")),
        }
    }

    /// The members of an object, each name passed to `each`, which reads its value.
    /// The reader must stand at `{` ([`Reader::peek`]).
    pub(crate) fn object(
        &mut self,
        mut each: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        self.enter()?;
        let first = self.names.len();
        let mut many: Option<BTreeSet<Cow<'a, str>>> = None;
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                if self.peek() != Some(b'"') {
                    return Err(self.fault("a member name (a string) is expected"));
                }
                let at = self.pos;
                let name = self.string()?;
                if self.check_names {
                    self.note(first, &mut many, name.clone(), at)?;
                }
                if self.peek() != Some(b':') {
                    return Err(self.fault("`:` is expected"));
                }
                self.pos += 1;
                if let Err(f) = each(self, name.clone()) {
                    return Err(f.within(name));
                }
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        self.names.truncate(first);
        self.depth -= 1;
        Ok(())
    }

    /// Remembers a member name of the object whose names start at `first`.
    fn note(
        &mut self,
        first: usize,
        many: &mut Option<BTreeSet<Cow<'a, str>>>,
        name: Cow<'a, str>,
        at: usize,
    ) -> Result<(), Fault> {
        let seen = match many {
            Some(set) => set.contains(&name),
            None => self.names[first..].contains(&name),
        };
        if seen {
            return Err(Fault::duplicate(&name, at));
        }
        match many {
            Some(set) => {
                set.insert(name);
            }
            None if self.names.len() - first < SCANNED_NAMES => self.names.push(name),
            None => {
                let mut set: BTreeSet<_> = self.names.drain(first..).collect();
                set.insert(name);
                *many = Some(set);
            }
        }
        Ok(())
    }

    /// The elements of an array, each index passed to `each`, which reads the
    /// element. The reader must stand at `[` ([`Reader::peek`]).
    pub(crate) fn array(
        &mut self,
        mut each: impl FnMut(&mut Self, usize) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        self.enter()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
        } else {
            let mut index = 0;
            loop {
                if let Err(f) = each(self, index) {
                    return Err(f.within(index));
                }
                index += 1;
                if !self.more(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// After a member or element: `,` (true: another follows) or `close` (false).
    fn more(&mut self, close: u8) -> Result<bool, Fault> {
        let more = match self.peek() {
            Some(b',') => true,
            Some(b) if b == close => false,
            _ => return Err(self.fault(&format!("`,` or `{}` is expected", char::from(close)))),
        };
        self.pos += 1;
        Ok(more)
    }

    /// Steps into an array or object (at its bracket), within [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), Fault> {
        if self.depth == MAX_DEPTH {
            return Err(self.fault("arrays and objects are nested deeper than 128 levels"));
        }
        self.depth += 1;
        self.pos += 1;
        Ok(())
    }

    /// A number's text. The reader must stand at its first byte.
    pub(crate) fn number(&mut self) -> Result<&'a str, Fault> {
        let bytes = self.bytes();
        let start = self.pos;
        let digits = |p: &mut usize| {
            let from = *p;
            while bytes.get(*p).is_some_and(u8::is_ascii_digit) {
                *p += 1;
            }
            *p > from
        };
        let mut p = start + usize::from(bytes.get(start) == Some(&b'-'));
        let whole = match bytes.get(p) {
            Some(b'0') => {
                p += 1;
                true
            }
            _ => digits(&mut p),
        };
        let fraction = bytes.get(p) != Some(&b'.') || {
            p += 1;
            digits(&mut p)
        };
        let exponent = !matches!(bytes.get(p), Some(b'e' | b'E')) || {
            p += 1;
            if matches!(bytes.get(p), Some(b'+' | b'-')) {
                p += 1;
            }
            digits(&mut p)
        };
        if !(whole && fraction && exponent) {
            self.pos = p;
            return Err(self.fault("a digit is expected in the number"));
        }
        self.pos = p;
        Ok(&self.text[start..p])
    }

    /// A string's contents, borrowed from the body unless it has escapes. The
    /// reader must stand at its opening quote.
    pub(crate) fn string(&mut self) -> Result<Cow<'a, str>, Fault> {
        self.pos += 1;
        let start = self.pos;
        if self.plain_run()? == b'"' {
            self.pos += 1;
            return Ok(Cow::Borrowed(&self.text[start..self.pos - 1]));
        }
        let mut out = String::with_capacity(self.pos - start + 16);
        out.push_str(&self.text[start..self.pos]);
        loop {
            out.push(self.escape()?);
            let from = self.pos;
            let stop = self.plain_run()?;
            out.push_str(&self.text[from..self.pos]);
            if stop == b'"' {
                self.pos += 1;
                return Ok(Cow::Owned(out));
            }
        }
    }

    /// A string checked as [`Reader::string`] reads it, not kept.
    fn skip_string(&mut self) -> Result<(), Fault> {
        self.pos += 1;
        while self.plain_run()? == b'\\' {
            self.escape()?;
        }
        self.pos += 1;
        Ok(())
    }

    /// Steps over characters that stand for themselves; stops at `"` or `\`
    /// (returned, not consumed).
    fn plain_run(&mut self) -> Result<u8, Fault> {
        let bytes = self.bytes();
        // Eight bytes at a time while none of them is `"`, `\` or below 0x20
        // (serde_json's reader skips the same way).
        const ONES: u64 = u64::from_ne_bytes([1; 8]);
        const HIGH: u64 = ONES << 7;
        while let Some(chunk) = bytes.get(self.pos..self.pos + 8) {
            let v = u64::from_ne_bytes(chunk.try_into().unwrap_or_default());
            let zero_in = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
            let quote = zero_in(v ^ (ONES * u64::from(b'"')));
            let backslash = zero_in(v ^ (ONES * u64::from(b'\\')));
            let control = v.wrapping_sub(ONES * 0x20) & !v & HIGH;
            if quote | backslash | control != 0 {
                break;
            }
            self.pos += 8;
        }
        while let Some(&b) = bytes.get(self.pos) {
            match b {
                b'"' | b'\\' => return Ok(b),
                0..=0x1F => {
                    return Err(self.fault(&format!(
                        "a string holds the control character U+{b:04X} unescaped"
                    )))
                }
                _ => self.pos += 1,
            }
        }
        Err(self.fault("a string's closing quote is expected"))
    }

    /// One escape sequence; the reader stands at its backslash.
    fn escape(&mut self) -> Result<char, Fault> {
        let at = self.pos;
        let bytes = self.bytes();
        self.pos += 2;
        Ok(match bytes.get(at + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let unit = self.hex4()?;
                let lone = |unit: u16| {
                    Fault::new(
                        format!(
                            "a string holds a lone surrogate \\u{unit:04x} (half of a UTF-16 \
                             pair, not a character)"
                        ),
                        at,
                    )
                };
                match unit {
                    0xD800..=0xDBFF => {
                        if !self.text[self.pos..].starts_with("\\u") {
                            return Err(lone(unit));
                        }
                        self.pos += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(lone(unit));
                        }
                        let c = 0x10000
                            + ((u32::from(unit) - 0xD800) << 10)
                            + (u32::from(low) - 0xDC00);
                        char::from_u32(c).ok_or_else(|| lone(unit))?
                    }
                    0xDC00..=0xDFFF => return Err(lone(unit)),
                    _ => char::from_u32(u32::from(unit)).ok_or_else(|| lone(unit))?,
                }
            }
            _ => {
                self.pos = at;
                return Err(
                    self.fault("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX) is expected")
                );
            }
        })
    }

    /// Four hex digits of a `\u` escape.
    fn hex4(&mut self) -> Result<u16, Fault> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
        match digits.and_then(|d| u16::from_str_radix(d, 16).ok()) {
            Some(unit) => {
                self.pos += 4;
                Ok(unit)
            }
            None => Err(self.fault("four hex digits are expected after \\u")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Json<'_>, Error> {
        read(text.as_bytes(), Reader::value)
    }

    fn message(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    /// `read_object` over `text` with the members `a` and `b`: the members' names and
    /// texts, or the refusal's text.
    fn object_of(text: &str) -> Result<Result<Vec<(String, String)>, String>, Error> {
        read_object(text.as_bytes(), &["a", "b"]).map(|r| {
            r.map(|ms| {
                ms.into_iter()
                    .map(|m| (m.name.into_owned(), m.text.to_owned()))
                    .collect()
            })
        })
    }

    #[test]
    fn an_object_body_is_its_members_with_their_texts_or_why_its_shape_is_refused() {
        let pairs = |v: &[(&str, &str)]| {
            Ok(Ok(v
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect()))
        };
        assert_eq!(
            object_of(r#"{"a": 1.50 , "b":{"x": [1]}}"#),
            pairs(&[("a", "1.50"), ("b", r#"{"x": [1]}"#)])
        );
        assert_eq!(object_of(" {} "), pairs(&[]));
        assert_eq!(
            object_of(r#"{"b\u0061": 1}"#),
            Ok(Err(r#"unknown member "ba"; the members are a, b"#.into()))
        );
        assert_eq!(
            object_of("[1]"),
            Ok(Err(
                "the body must be a JSON object with the members a, b".into()
            ))
        );
        // Given twice in the object: its shape; deeper: the body is not JSON.
        assert_eq!(
            object_of(r#"{"a": 1, "\u0061": 2}"#),
            Ok(Err(r#"member "a" appears twice"#.into()))
        );
        assert_eq!(
            object_of(r#"{"a": {"x": 1, "x": 2}}"#).unwrap_err().code(),
            "invalid_json"
        );
        // A body that is not JSON is that, whatever else is wrong with it.
        for bad in [
            r#"{"a": 1, "a": 2} x"#,
            "[1] x",
            r#"{"c": 1"#,
            "\u{feff}{}",
            r#"{"a": "\udc00"}"#,
        ] {
            assert_eq!(object_of(bad).unwrap_err().code(), "invalid_json", "{bad}");
        }
    }

    /// Every value serde_json reads, this reader reads alike (and borrows strings
    /// without escapes).
    #[test]
    fn reads_what_serde_json_reads() {
        let texts = [
            r#"{"a":[1,-2,3.5,-0.0,1e3,1E-3,0,null,true,false,"x\"\\\/\b\f\n\r\tz"],"b":{}}"#,
            r#" [ ] "#,
            r#""\u00e9\ud83d\uddd1\u0000""#,
            "\"日本\"",
            "18446744073709551616",
            "-9223372036854775808",
            "[[[[{\"a\":[{}]}]]]]",
        ];
        fn same(a: &Json, b: &serde_json::Value) -> bool {
            use serde_json::Value as V;
            match (a, b) {
                (Json::Null, V::Null) => true,
                (Json::Bool(x), V::Bool(y)) => x == y,
                (Json::Number(t), V::Number(_)) => number_scalar(t) == owned_scalar(b),
                (Json::Str(x), V::String(y)) => x == y,
                (Json::Array(x), V::Array(y)) => {
                    x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
                }
                (Json::Object(x), V::Object(y)) => {
                    x.0.len() == y.len()
                        && x.0
                            .iter()
                            .all(|(k, v)| y.get(k.as_ref()).is_some_and(|w| same(v, w)))
                }
                _ => false,
            }
        }
        for text in texts {
            let want: serde_json::Value = serde_json::from_str(text).unwrap();
            assert!(same(&parse(text).unwrap(), &want), "{text}");
        }
        let Json::Array(v) = parse(r#"["plain","esc\n"]"#).unwrap() else {
            panic!()
        };
        assert!(matches!(v[0], Json::Str(Cow::Borrowed("plain"))));
        assert!(matches!(v[1], Json::Str(Cow::Owned(_))));
    }

    /// What the core's serde visitor makes of a `Value`.
    fn owned_scalar(v: &serde_json::Value) -> Scalar<'static> {
        use serde::Deserialize;
        match Scalar::deserialize(v).unwrap() {
            Scalar::Str(s) => Scalar::Str(Cow::Owned(s.into_owned())),
            Scalar::Null => Scalar::Null,
            Scalar::Bool => Scalar::Bool,
            Scalar::Int(n) => Scalar::Int(n),
            Scalar::Float(x) | Scalar::Fractional(x) => Scalar::Float(x),
            Scalar::Nested => Scalar::Nested,
        }
    }

    /// What serde_json refuses, this reader refuses, with the line and column.
    #[test]
    fn refuses_what_json_does_not_allow() {
        for (text, why) in [
            ("", "the body ends where a value is expected at line 1 column 1"),
            ("[1,]", "a value is expected at line 1 column 4"),
            ("[1 2]", "`,` or `]` is expected at line 1 column 4"),
            ("{\"a\" 1}", "`:` is expected at line 1 column 6"),
            ("{1:2}", "a member name (a string) is expected at line 1 column 2"),
            ("{\"a\":1,}", "a member name (a string) is expected at line 1 column 8"),
            ("[01]", "`,` or `]` is expected at line 1 column 3"),
            ("[-]", "a digit is expected in the number at line 1 column 3"),
            ("[1.]", "a digit is expected in the number at line 1 column 4"),
            ("[1e+]", "a digit is expected in the number at line 1 column 5"),
            ("[.5]", "a value is expected at line 1 column 2"),
            ("[+1]", "a value is expected at line 1 column 2"),
            ("[tru]", "a value is expected at line 1 column 2"),
            ("[NaN]", "a value is expected at line 1 column 2"),
            ("\"a\tb\"", "a string holds the control character U+0009 unescaped at line 1 column 3"),
            ("\"\\x\"", "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX) is expected at line 1 column 2"),
            ("\"\\u12\"", "four hex digits are expected after \\u at line 1 column 4"),
            ("\"abc", "the body ends where a string's closing quote is expected at line 1 column 5"),
            ("[1]\n x", "characters follow the JSON value at line 2 column 2"),

            ("[\"é\", x]", "a value is expected at line 1 column 7"),
        ] {
            assert_eq!(message(text), format!("body is not valid JSON: {why}"), "{text:?}");
            assert!(serde_json::from_str::<serde_json::Value>(text).is_err(), "{text:?}");
        }
        assert_eq!(
            message("\u{feff}[]"),
            "body is not valid JSON: the body starts with a UTF-8 byte order mark (EF BB BF); \
             send JSON without it"
        );
        let e = read(b"[\"\xff\"]", Reader::value).unwrap_err();
        assert_eq!(
            e.to_string(),
            "body is not valid JSON: byte 0xff is not UTF-8 at line 1 column 3"
        );
    }

    #[test]
    fn numbers_keep_their_text_and_read_as_serde_json_reads_them() {
        assert_eq!(parse("1e400"), Ok(Json::Number("1e400")));
        assert_eq!(number_scalar("1e400"), Scalar::Float(f64::INFINITY));
        assert_eq!(number_scalar("-1e400"), Scalar::Float(f64::NEG_INFINITY));
        // Below the smallest double it is 0.0, but not a whole number by its text.
        assert_eq!(number_scalar("1e-400"), Scalar::Fractional(0.0));
        assert_eq!(
            number_scalar("0.99999999999999999"),
            Scalar::Fractional(1.0)
        );
        assert_eq!(number_scalar("0.5"), Scalar::Float(0.5));
        assert_eq!(number_scalar("1.0e-400"), Scalar::Fractional(0.0));
        assert_eq!(number_scalar("0e-400"), Scalar::Float(0.0));
        assert_eq!(
            number_scalar("1e999999999999999999999"),
            Scalar::Float(f64::INFINITY)
        );
        assert_eq!(
            number_scalar("1e-999999999999999999999"),
            Scalar::Fractional(0.0)
        );
        assert_eq!(number_scalar("41"), Scalar::Int(41));
        assert_eq!(number_scalar("41.0"), Scalar::Float(41.0));
        assert_eq!(number_scalar("0"), Scalar::Int(0));
        assert_eq!(number_scalar("9223372036854775807"), Scalar::Int(i64::MAX));
        assert_eq!(
            number_scalar("9223372036854775808"),
            Scalar::Float(9.223372036854776e18)
        );
        let Scalar::Float(z) = number_scalar("-0") else {
            panic!()
        };
        assert!(z == 0.0 && z.is_sign_negative());
        for text in [
            "-0",
            "0.1",
            "1e-7",
            "123456789012345678901234567890",
            "2.2250738585072011e-308",
            "1.7976931348623157e308",
            "-9223372036854775809",
            "33.333333333333336",
        ] {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(number_scalar(text), owned_scalar(&v), "{text}");
        }
    }

    #[test]
    fn objects_with_many_members_find_the_one_given_twice() {
        let members: Vec<String> = (0..1000).map(|i| format!("\"m{i}\":{i}")).collect();
        let body = format!("{{{},\"m999\":1}}", members.join(","));
        assert_eq!(
            message(&body),
            r#"body is not valid JSON: member "m999" appears twice (at /m999)"#
        );
        let all = format!("{{{}}}", members.join(","));
        let Json::Object(m) = parse(&all).unwrap() else {
            panic!()
        };
        assert_eq!(m.get("m500"), Some(&Json::Number("500")));
        // Long names are shortened in the message.
        let long = "n".repeat(200);
        let m = message(&format!(r#"{{"{long}":1,"{long}":2}}"#));
        assert!(m.len() < 250 && m.contains("nnn…"), "{m}");
    }

    /// Eight-byte skipping finds a quote, backslash or control byte at any offset.
    #[test]
    fn strings_end_where_they_end_at_any_offset() {
        for at in 0..20 {
            let plain = "a".repeat(at);
            assert_eq!(
                parse(&format!("\"{plain}\"")),
                Ok(Json::Str(Cow::Borrowed(&plain)))
            );
            let escaped = format!("\"{plain}\\n{plain}\"");
            assert_eq!(
                parse(&escaped),
                Ok(Json::Str(Cow::Owned(format!("{plain}\n{plain}"))))
            );
            let control = format!("\"{plain}\u{1f}{plain}\"");
            assert!(
                message(&control).ends_with(&format!("column {}", at + 2)),
                "{at}"
            );
            let high = format!("\"{plain}é\u{7f}\u{80}{plain}\"");
            assert!(parse(&high).is_ok());
        }
    }

    /// Seeded random edits of real bodies: this reader and serde_json accept and
    /// refuse the same texts, but for what the body rules refuse on purpose (a
    /// member twice) or accept on purpose (numbers out of range), and neither panics.
    #[test]
    fn random_edits_are_judged_as_serde_json_judges_them() {
        let bodies = [
            include_str!("../../tests/fixtures/webhooks/with-fill/tts-v3-uplink.json"),
            include_str!("../../tests/fixtures/webhooks/with-fill/chirpstack-v4-up.json"),
            r#"[{"device_id":"a\u00e9\ud83d\uddd1","seq":-0,"ts":"x","fill_pct":1.5e-3,"n":[true,false,null]}]"#,
        ];
        let pieces = [
            "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "d800", "dc00", "0", "-", ".", "e",
            "E+", "1", "9", "\u{1}", " ", "\n", "null", "tru", "é", "\"a\":1,", "\"a\":",
        ];
        let mut rng = fastrand::Rng::with_seed(9);
        for _ in 0..20_000 {
            let mut text = bodies[rng.usize(..bodies.len())].to_owned();
            for _ in 0..rng.usize(1..4) {
                let mut at = rng.usize(..=text.len());
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                if rng.bool() {
                    text.insert_str(at, pieces[rng.usize(..pieces.len())]);
                } else {
                    let mut end = (at + rng.usize(1..4)).min(text.len());
                    while !text.is_char_boundary(end) {
                        end += 1;
                    }
                    text.replace_range(at..end, "");
                }
            }
            let ours = parse(&text).map_err(|e| e.to_string());
            let theirs =
                serde_json::from_str::<serde_json::Value>(&text).map_err(|e| e.to_string());
            match (&ours, &theirs) {
                (Ok(_), Ok(_)) | (Err(_), Err(_)) => {}
                (Ok(_), Err(e)) => assert!(e.contains("number out of range"), "{text}: {e}"),
                (Err(e), Ok(_)) => assert!(e.contains("appears twice"), "{text}: {e}"),
            }
        }
    }
}
