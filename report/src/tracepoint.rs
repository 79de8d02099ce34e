//! Tracepoint samples as text: what libtraceevent's `tep_print_event` (the
//! trace output of `perf script` and perf report's `trace` key) prints.
//!
//! Each tracepoint's `format` (from the file's TRACING_DATA) names the
//! fields of its raw record and a `print fmt:` line, a printf format and C
//! expressions over `REC->field`. [`Tracepoints`] parses those once and
//! evaluates them per sample: arithmetic, comparisons, `?:`, casts,
//! `__get_str`, `__print_flags` and `__print_symbolic`. An expression it
//! cannot evaluate prints like libtraceevent's fallback, `[FAILED TO
//! PARSE]` and the fields.

use rustc_hash::FxHashMap as HashMap;

use prec_format::tracing::TracingData;

/// The tracepoint formats of `file`'s TRACING_DATA, if it has any.
pub fn from_file(file: &prec_format::PerfFile<'_>) -> Option<Tracepoints> {
    let f = file.feature(prec_format::FeatureId::TRACING_DATA)?;
    let data = prec_format::tracing::parse(f.data, f.offset).ok()?;
    Some(Tracepoints::new(&data))
}

/// One field of a tracepoint record.
#[derive(Clone, Debug)]
struct Field {
    name: String,
    offset: usize,
    size: usize,
    signed: bool,
    /// `char name[N]`: a string.
    char_array: bool,
    /// Element count of `type name[N]` (0: not an array).
    array_len: usize,
    /// `__data_loc`: a 32-bit (offset, length) of data after the fields.
    data_loc: bool,
    /// libtraceevent's TEP_FIELD_IS_LONG (any `long` in the type) and
    /// TEP_FIELD_IS_POINTER, which decide how raw fields print.
    long: bool,
    pointer: bool,
    /// libtraceevent's TEP_FIELD_IS_STRING: an array of `char`, `u8` or
    /// `s8`, which sets its column width (see [`FieldKey`]).
    string: bool,
}

/// One tracepoint field as a report's sort key (perf's dynamic sort
/// entries: `--sort prev_state`, `--sort sched:sched_switch.next_comm`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldKey {
    /// The tracepoint's id.
    pub id: u64,
    index: usize,
    pub name: String,
    /// perf's `hde_width` before entries widen it: the name's length, and
    /// the field's size (in hex digits and `0x` unless a string).
    pub min_width: usize,
    /// A `__data_loc` field, whose data's length varies.
    pub data_loc: bool,
}

impl FieldKey {
    fn new(id: u64, index: usize, f: &Field) -> FieldKey {
        let size = if f.string { f.size } else { f.size * 2 + 2 };
        FieldKey {
            id,
            index,
            name: f.name.clone(),
            min_width: f.name.len().max(size),
            data_loc: f.data_loc,
        }
    }
}

/// A print-fmt expression.
#[derive(Clone, Debug)]
enum Expr {
    Num(u64),
    Str(String),
    Field(usize),
    Index(usize, Box<Expr>),
    Unary(u8, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A parenthesized expression (see [`rotate`]).
    Group(Box<Expr>),
    /// A cast to an integer type of `bytes`, signed or not.
    Cast(usize, bool, Box<Expr>),
    GetStr(usize),
    Flags(Box<Expr>, String, Vec<(Expr, String)>),
    Symbolic(Box<Expr>, Vec<(Expr, String)>),
}

/// A value while evaluating.
#[derive(Clone, Debug)]
enum Value {
    Num(u64),
    Str(String),
}

impl Value {
    fn num(&self) -> u64 {
        match self {
            Value::Num(n) => *n,
            Value::Str(s) => (!s.is_empty()) as u64,
        }
    }
}

/// One parsed event format.
#[derive(Debug)]
struct Event {
    fields: Vec<Field>,
    /// The first field that is not `common_*`.
    first_own: usize,
    /// (format text, argument expressions), or `None` when the print fmt
    /// could not be parsed.
    print: Option<(Vec<u8>, Vec<Expr>)>,
}

/// The tracepoint formats of one file, by tracepoint id.
#[derive(Debug, Default)]
pub struct Tracepoints {
    events: HashMap<u64, Event>,
    big_endian: bool,
    /// printk format strings by address.
    printk: HashMap<u64, String>,
}

/// Finds the kernel function at an address: (name, start).
pub type FunctionResolver<'a> = &'a mut dyn FnMut(u64) -> Option<(String, u64)>;

/// libtraceevent's `parse_ftrace_printk`: `0xADDR : "text"` lines, the
/// quotes and a trailing `\n` dropped.
fn parse_printk(text: &str) -> HashMap<u64, String> {
    let mut out = HashMap::default();
    for line in text.lines() {
        let Some((addr, fmt)) = line.split_once(" : ") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim().trim_start_matches("0x"), 16) else {
            continue;
        };
        let mut s = fmt.trim();
        s = s.strip_prefix('"').unwrap_or(s);
        s = s.strip_suffix('"').unwrap_or(s);
        s = s.strip_suffix("\\n").unwrap_or(s);
        out.insert(addr, s.to_string());
    }
    out
}

impl Tracepoints {
    /// Parses every event format of `data`.
    pub fn new(data: &TracingData<'_>) -> Tracepoints {
        let mut events = HashMap::default();
        for e in &data.events {
            if let Some((id, ev)) = parse_event(e.text) {
                events.insert(id, ev);
            }
        }
        Tracepoints {
            events,
            big_endian: data.big_endian,
            printk: parse_printk(data.printk),
        }
    }

    /// Whether tracepoint `id` has a format.
    pub fn knows(&self, id: u64) -> bool {
        self.events.contains_key(&id)
    }

    /// The trace output of a raw record of tracepoint `id`; `functions`
    /// names kernel addresses for `%pS`/`%ps`.
    pub fn format(&self, id: u64, raw: &[u8], functions: FunctionResolver<'_>) -> Option<String> {
        let rec = self.record(id, raw)?;
        if let Some((fmt, args)) = &rec.ev.print {
            if let Some(s) = rec.printf(fmt, args, functions) {
                return Some(s);
            }
        }
        Some(rec.failed())
    }

    /// A raw record of tracepoint `id` as libtraceevent's
    /// `tep_print_fields` prints it (perf report's `--raw-trace`): each of
    /// its own fields as ` name=value`.
    pub fn format_fields(&self, id: u64, raw: &[u8]) -> Option<String> {
        Some(self.record(id, raw)?.raw_fields())
    }

    /// Field `name` of tracepoint `id` as a sort key, common fields
    /// included (libtraceevent's `tep_find_any_field`).
    pub fn field(&self, id: u64, name: &str) -> Option<FieldKey> {
        let ev = self.events.get(&id)?;
        let index = ev.fields.iter().position(|f| f.name == name)?;
        Some(FieldKey::new(id, index, &ev.fields[index]))
    }

    /// The fields of tracepoint `id` but the common ones, in the format's
    /// order (perf's `trace_fields` and `EVENT.*` keys).
    pub fn own_fields(&self, id: u64) -> Vec<FieldKey> {
        let Some(ev) = self.events.get(&id) else {
            return Vec::new();
        };
        (ev.first_own..ev.fields.len())
            .map(|i| FieldKey::new(id, i, &ev.fields[i]))
            .collect()
    }

    /// The bytes of `key`'s field in a raw record, which perf's dynamic
    /// sort entries compare: a `__data_loc` field's data (its NUL
    /// included), another field's bytes in the record.
    pub fn field_bytes<'r>(&self, key: &FieldKey, raw: &'r [u8]) -> &'r [u8] {
        let Some(rec) = self.record(key.id, raw) else {
            return &[];
        };
        let Some(f) = rec.ev.fields.get(key.index) else {
            return &[];
        };
        let (at, len) = match f.data_loc {
            true => match rec.uint(f.offset, 4) {
                Some(loc) => ((loc & 0xffff) as usize, (loc >> 16) as usize),
                None => return &[],
            },
            false => (f.offset, f.size),
        };
        raw.get(at..at.saturating_add(len)).unwrap_or_default()
    }

    /// `key`'s field in a raw record as libtraceevent's `tep_print_field`
    /// prints it.
    pub fn field_text(&self, key: &FieldKey, raw: &[u8]) -> String {
        self.record(key.id, raw)
            .and_then(|rec| rec.printed_field(rec.ev.fields.get(key.index)?))
            .unwrap_or_default()
    }

    fn record<'a>(&'a self, id: u64, raw: &'a [u8]) -> Option<Record<'a>> {
        Some(Record {
            ev: self.events.get(&id)?,
            raw,
            big_endian: self.big_endian,
            printk: &self.printk,
        })
    }
}

struct Record<'a> {
    ev: &'a Event,
    raw: &'a [u8],
    big_endian: bool,
    printk: &'a HashMap<u64, String>,
}

impl Record<'_> {
    fn uint(&self, at: usize, size: usize) -> Option<u64> {
        let b = self.raw.get(at..at.checked_add(size)?)?;
        let mut v = 0u64;
        for i in 0..size.min(8) {
            let byte = if self.big_endian {
                b[i]
            } else {
                b[size - 1 - i]
            };
            v = v << 8 | byte as u64;
        }
        Some(v)
    }

    fn sign_extend(v: u64, size: usize, signed: bool) -> u64 {
        if signed && size > 0 && size < 8 {
            let shift = 64 - 8 * size as u32;
            (((v << shift) as i64) >> shift) as u64
        } else {
            v
        }
    }

    fn field_num(&self, f: &Field, index: usize) -> Option<u64> {
        let elem = f.size.checked_div(f.array_len).unwrap_or(f.size);
        let at = f.offset.checked_add(index.checked_mul(elem)?)?;
        Some(Self::sign_extend(self.uint(at, elem)?, elem, f.signed))
    }

    fn c_string(bytes: &[u8]) -> String {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    }

    fn data_loc(&self, f: &Field) -> Option<&[u8]> {
        let loc = self.uint(f.offset, 4)?;
        let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
        self.raw.get(off..off.checked_add(len)?)
    }

    fn eval(&self, e: &Expr) -> Option<Value> {
        Some(match e {
            Expr::Num(n) => Value::Num(*n),
            Expr::Str(s) => Value::Str(s.clone()),
            Expr::Field(i) => {
                let f = self.ev.fields.get(*i)?;
                if f.data_loc {
                    Value::Str(Self::c_string(self.data_loc(f)?))
                } else if f.char_array {
                    Value::Str(Self::c_string(
                        self.raw.get(f.offset..f.offset.checked_add(f.size)?)?,
                    ))
                } else if f.array_len > 0 {
                    return None;
                } else {
                    Value::Num(self.field_num(f, 0)?)
                }
            }
            Expr::Index(i, idx) => {
                let f = self.ev.fields.get(*i)?;
                let idx = usize::try_from(self.eval(idx)?.num()).ok()?;
                if f.array_len == 0 || idx >= f.array_len {
                    return None;
                }
                Value::Num(self.field_num(f, idx)?)
            }
            Expr::Unary(op, a) => {
                let v = self.eval(a)?.num();
                Value::Num(match op {
                    b'-' => v.wrapping_neg(),
                    b'!' => (v == 0) as u64,
                    b'~' => !v,
                    _ => v,
                })
            }
            Expr::Binary(op, a, b) => {
                if *op == "&&" {
                    let l = self.eval(a)?.num() != 0;
                    return Some(Value::Num((l && self.eval(b)?.num() != 0) as u64));
                }
                if *op == "||" {
                    let l = self.eval(a)?.num() != 0;
                    return Some(Value::Num((l || self.eval(b)?.num() != 0) as u64));
                }
                let (l, r) = (self.eval(a)?.num(), self.eval(b)?.num());
                Value::Num(match *op {
                    "*" => l.wrapping_mul(r),
                    "/" => l.checked_div(r)?,
                    "%" => l.checked_rem(r)?,
                    "+" => l.wrapping_add(r),
                    "-" => l.wrapping_sub(r),
                    "<<" => l.checked_shl(r as u32).unwrap_or(0),
                    ">>" => l.checked_shr(r as u32).unwrap_or(0),
                    // libtraceevent compares as unsigned long long.
                    "<" => (l < r) as u64,
                    "<=" => (l <= r) as u64,
                    ">" => (l > r) as u64,
                    ">=" => (l >= r) as u64,
                    "==" => (l == r) as u64,
                    "!=" => (l != r) as u64,
                    "&" => l & r,
                    "^" => l ^ r,
                    "|" => l | r,
                    _ => return None,
                })
            }
            Expr::Group(e) => self.eval(e)?,
            Expr::Cond(c, a, b) => {
                if self.eval(c)?.num() != 0 {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::Cast(bytes, signed, a) => match self.eval(a)? {
                Value::Num(v) => {
                    let v = if *bytes < 8 {
                        v & ((1u64 << (8 * bytes)) - 1)
                    } else {
                        v
                    };
                    Value::Num(Self::sign_extend(v, *bytes, *signed))
                }
                s => s,
            },
            Expr::GetStr(i) => {
                let f = self.ev.fields.get(*i)?;
                if f.data_loc {
                    Value::Str(Self::c_string(self.data_loc(f)?))
                } else {
                    Value::Str(Self::c_string(
                        self.raw.get(f.offset..f.offset.checked_add(f.size)?)?,
                    ))
                }
            }
            Expr::Flags(v, delim, flags) => {
                let mut val = self.eval(v)?.num();
                let mut out = String::new();
                let mut printed = false;
                for (fe, name) in flags {
                    let fv = self.eval(fe)?.num();
                    // libtraceevent: a zero value shows the first flag it
                    // could not evaluate.
                    if val == 0 && (fv as i64) < 0 {
                        out.push_str(name);
                        break;
                    }
                    if (fv as i64) > 0 && val & fv == fv {
                        if printed {
                            out.push_str(delim);
                        }
                        out.push_str(name);
                        printed = true;
                        val &= !fv;
                    }
                }
                if val != 0 {
                    if printed {
                        out.push_str(delim);
                    }
                    out.push_str(&format!("0x{val:x}"));
                }
                Value::Str(out)
            }
            Expr::Symbolic(v, syms) => {
                let val = self.eval(v)?.num();
                for (se, name) in syms {
                    if self.eval(se)?.num() == val {
                        return Some(Value::Str(name.clone()));
                    }
                }
                Value::Str(format!("0x{val:x}"))
            }
        })
    }

    /// Formats `fmt` with `args` like the kernel's printf subset.
    fn printf(&self, fmt: &[u8], args: &[Expr], functions: FunctionResolver<'_>) -> Option<String> {
        let mut out = String::new();
        let mut args = args.iter();
        let mut i = 0;
        while i < fmt.len() {
            let c = fmt[i];
            if c != b'%' {
                out.push(c as char);
                i += 1;
                continue;
            }
            i += 1;
            if fmt.get(i) == Some(&b'%') {
                out.push('%');
                i += 1;
                continue;
            }
            let mut flags = String::new();
            while let Some(&f) = fmt.get(i).filter(|f| b"-+ #0".contains(f)) {
                flags.push(f as char);
                i += 1;
            }
            let mut width = String::new();
            while let Some(&d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                width.push(d as char);
                i += 1;
            }
            let mut precision = None;
            if fmt.get(i) == Some(&b'.') {
                i += 1;
                let mut p = String::new();
                while let Some(&d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                    p.push(d as char);
                    i += 1;
                }
                precision = Some(p.parse::<usize>().unwrap_or(0));
            }
            let mut long = 0;
            let mut short = 0;
            while let Some(&l) = fmt.get(i).filter(|l| b"lhzLjt".contains(l)) {
                match l {
                    b'h' => short += 1,
                    _ => long += 1,
                }
                i += 1;
            }
            let conv = *fmt.get(i)?;
            i += 1;
            let mut pointer_ext = None;
            if conv == b'p' && fmt.get(i).is_some_and(|c| c.is_ascii_alphabetic()) {
                pointer_ext = Some(fmt[i]);
                i += 1;
            }
            let v = self.eval(args.next()?)?;
            let width: usize = width.parse().unwrap_or(0);
            let left = flags.contains('-');
            let zero = flags.contains('0') && !left;
            let text = match conv {
                b's' => match v {
                    Value::Str(s) => match precision {
                        Some(p) => s.chars().take(p).collect(),
                        None => s,
                    },
                    // A `const char *` into the kernel: its printk string.
                    Value::Num(n) => match self.printk.get(&n) {
                        Some(s) => s.clone(),
                        None => format!("{n:x}"),
                    },
                },
                b'c' => ((v.num() as u8) as char).to_string(),
                b'd' | b'i' | b'u' | b'x' | b'X' | b'o' => {
                    let bytes = if long > 0 {
                        8
                    } else if short == 1 {
                        2
                    } else if short >= 2 {
                        1
                    } else {
                        4
                    };
                    let n = v.num();
                    let n = if bytes < 8 {
                        n & ((1u64 << (8 * bytes)) - 1)
                    } else {
                        n
                    };
                    let mut digits = match conv {
                        b'd' | b'i' => {
                            let s = Self::sign_extend(n, bytes, true) as i64;
                            let mut d = s.unsigned_abs().to_string();
                            if let Some(p) = precision {
                                while d.len() < p {
                                    d.insert(0, '0');
                                }
                            }
                            if s < 0 {
                                d.insert(0, '-');
                            } else if flags.contains('+') {
                                d.insert(0, '+');
                            } else if flags.contains(' ') {
                                d.insert(0, ' ');
                            }
                            d
                        }
                        b'u' => n.to_string(),
                        b'x' => format!("{n:x}"),
                        b'X' => format!("{n:X}"),
                        _ => format!("{n:o}"),
                    };
                    if !matches!(conv, b'd' | b'i') {
                        if let Some(p) = precision {
                            while digits.len() < p {
                                digits.insert(0, '0');
                            }
                        }
                        if flags.contains('#') && n != 0 {
                            match conv {
                                b'x' => digits.insert_str(0, "0x"),
                                b'X' => digits.insert_str(0, "0X"),
                                b'o' => digits.insert(0, '0'),
                                _ => {}
                            }
                        }
                    }
                    if zero && precision.is_none() && digits.len() < width {
                        let sign = digits.starts_with(['-', '+', ' ']) as usize;
                        let prefix = if digits[sign..].starts_with("0x")
                            || digits[sign..].starts_with("0X")
                        {
                            sign + 2
                        } else {
                            sign
                        };
                        let pad = "0".repeat(width - digits.len());
                        digits.insert_str(prefix, &pad);
                    }
                    digits
                }
                b'p' => {
                    let n = v.num();
                    match pointer_ext {
                        // libtraceevent's print_function.
                        Some(e @ (b'S' | b's' | b'F' | b'f')) => match functions(n) {
                            Some((name, start)) if matches!(e, b'S' | b'F') => {
                                format!("{name}+0x{:x}", n.wrapping_sub(start))
                            }
                            Some((name, _)) => name,
                            None => format!("0x{n:x}"),
                        },
                        Some(_) => format!("0x{n:x}"),
                        None if n == 0 => "(nil)".to_string(),
                        None => format!("0x{n:x}"),
                    }
                }
                _ => return None,
            };
            let len = text.chars().count();
            if len < width {
                let pad = " ".repeat(width - len);
                if left {
                    out.push_str(&text);
                    out.push_str(&pad);
                } else {
                    out.push_str(&pad);
                    out.push_str(&text);
                }
            } else {
                out.push_str(&text);
            }
        }
        Some(out)
    }

    /// libtraceevent's output for an event it cannot print.
    fn failed(&self) -> String {
        format!("[FAILED TO PARSE]{}", self.fields())
    }

    /// libtraceevent's `tep_print_fields`: an array as its bytes unless it
    /// is a printable string; numbers by size, sign and type.
    fn raw_fields(&self) -> String {
        let mut out = String::new();
        for f in &self.ev.fields[self.ev.first_own..] {
            out.push(' ');
            out.push_str(&f.name);
            out.push('=');
            if let Some(text) = self.printed_field(f) {
                out.push_str(&text);
            }
        }
        out
    }

    /// libtraceevent's `tep_print_field` of one field (`None`: a number
    /// past the record's end, which prints nothing).
    fn printed_field(&self, f: &Field) -> Option<String> {
        if f.data_loc || f.char_array || f.array_len > 0 {
            let bytes = if f.data_loc {
                self.data_loc(f)
            } else {
                self.raw.get(f.offset..f.offset.saturating_add(f.size))
            };
            let bytes = bytes.unwrap_or_default();
            let text = &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len())];
            let string = f.data_loc || f.char_array;
            if string
                && text
                    .iter()
                    .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
            {
                return Some(String::from_utf8_lossy(text).into_owned());
            }
            let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
            return Some(format!("ARRAY[{}]", hex.join(", ")));
        }
        let v = self.uint(f.offset, f.size)?;
        Some(match (f.pointer, f.signed, f.size) {
            (true, _, _) => format!("{v:#x}"),
            (_, true, 4) if f.long => format!("{:#x}", v as u32),
            (_, true, 4) => (v as u32 as i32).to_string(),
            (_, true, 2) => format!("{:2}", v as u16 as i16),
            (_, true, 1) => format!("{:1}", v as u8 as i8),
            (_, true, _) => (v as i64).to_string(),
            (_, false, _) if f.long => format!("{v:#x}"),
            (_, false, _) => v.to_string(),
        })
    }

    /// libtraceevent's `print_event_fields`, after `[FAILED TO PARSE]`.
    fn fields(&self) -> String {
        let mut out = String::new();
        for f in &self.ev.fields[self.ev.first_own..] {
            out.push(' ');
            out.push_str(&f.name);
            out.push('=');
            if f.data_loc || f.char_array {
                let s = if f.data_loc {
                    self.data_loc(f).map(Self::c_string)
                } else {
                    self.raw
                        .get(f.offset..f.offset + f.size)
                        .map(Self::c_string)
                };
                out.push_str(&s.unwrap_or_default());
            } else if f.array_len > 0 {
                out.push_str("ARRAY[");
                let elem = f.size.checked_div(f.array_len).unwrap_or(f.size);
                for i in 0..f.array_len {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if let Some(v) = self.uint(f.offset + i * elem, elem) {
                        out.push_str(&format!("{v:02x}"));
                    }
                }
                out.push(']');
            } else if let Some(v) = self.field_num(f, 0) {
                if f.signed {
                    out.push_str(&(v as i64).to_string());
                } else {
                    out.push_str(&v.to_string());
                }
            }
        }
        out
    }
}

/// Parses one `format` file: its id and event.
fn parse_event(text: &str) -> Option<(u64, Event)> {
    let mut id = None;
    let mut fields = Vec::new();
    let mut print_line = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("ID:") {
            id = v.trim().parse::<u64>().ok();
        } else if let Some(v) = t.strip_prefix("field:") {
            if let Some(f) = parse_field(v) {
                fields.push(f);
            }
        } else if let Some(v) = t.strip_prefix("print fmt:") {
            print_line = Some(v.trim());
        }
    }
    let first_own = fields
        .iter()
        .position(|f| !f.name.starts_with("common_"))
        .unwrap_or(fields.len());
    let print = print_line.and_then(|p| {
        let mut parser = Parser {
            toks: tokenize(p)?,
            at: 0,
            fields: &fields,
        };
        let fmt = match parser.next()? {
            Tok::Str(s) => s,
            _ => return None,
        };
        let mut args = Vec::new();
        while parser.peek().is_some() {
            if !parser.eat_punct(",") {
                return None;
            }
            args.push(parser.expr()?);
        }
        Some((fmt.into_bytes(), args))
    });
    Some((
        id?,
        Event {
            fields,
            first_own,
            print,
        },
    ))
}

/// `type name;\toffset:N;\tsize:N;\tsigned:N;`
fn parse_field(v: &str) -> Option<Field> {
    let mut parts = v.split(';').map(str::trim);
    let decl = parts.next()?;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for p in parts {
        if let Some(x) = p.strip_prefix("offset:") {
            offset = x.trim().parse().ok();
        } else if let Some(x) = p.strip_prefix("size:") {
            size = x.trim().parse().ok();
        } else if let Some(x) = p.strip_prefix("signed:") {
            signed = x.trim() == "1";
        }
    }
    let data_loc = decl.starts_with("__data_loc");
    let (ty, name) = decl.rsplit_once(|c: char| c.is_whitespace())?;
    let (name, array_len) = match name.split_once('[') {
        Some((n, rest)) => (n, rest.trim_end_matches(']').trim().parse().unwrap_or(0)),
        None => (name, 0),
    };
    let char_array = array_len > 0 && (ty.ends_with("char") || ty.ends_with("char ")) && !data_loc;
    Some(Field {
        name: name.to_string(),
        offset: offset?,
        size: size?,
        signed,
        char_array,
        array_len: if char_array { 0 } else { array_len },
        data_loc,
        long: ty.contains("long"),
        pointer: ty.trim_end().ends_with('*'),
        string: decl.contains('[') && ["char", "u8", "s8"].iter().any(|t| ty.contains(t)),
    })
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(u64),
    Str(String),
    Ident(String),
    Punct(&'static str),
}

/// Longest first, so `<<` is not read as two `<`.
const PUNCTS: [&str; 30] = [
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "{", "}", "[", "]", ",", "?",
    ":", "+", "-", "*", "/", "%", "&", "|", "^", "!", "~", "<", ">",
];

fn tokenize(s: &str) -> Option<Vec<Tok>> {
    let b = s.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let mut out = Vec::new();
            i += 1;
            loop {
                let c = *b.get(i)?;
                i += 1;
                match c {
                    b'"' => break,
                    b'\\' => {
                        let e = *b.get(i)?;
                        i += 1;
                        out.push(match e {
                            b'n' => b'\n',
                            b't' => b'\t',
                            b'0' => 0,
                            other => other,
                        });
                    }
                    _ => out.push(c),
                }
            }
            // Adjacent literals concatenate.
            if let Some(Tok::Str(prev)) = toks.last_mut() {
                prev.push_str(&String::from_utf8_lossy(&out));
            } else {
                toks.push(Tok::Str(String::from_utf8_lossy(&out).into_owned()));
            }
        } else if c == b'\'' {
            // A character literal.
            let v = *b.get(i + 1)?;
            if b.get(i + 2) != Some(&b'\'') {
                return None;
            }
            toks.push(Tok::Num(v as u64));
            i += 3;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let lit = s[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let v = if let Some(h) = lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
                u64::from_str_radix(h, 16).ok()?
            } else if lit.len() > 1 && lit.starts_with('0') {
                u64::from_str_radix(&lit[1..], 8).ok()?
            } else {
                lit.parse().ok()?
            };
            toks.push(Tok::Num(v));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            toks.push(Tok::Ident(s[start..i].to_string()));
        } else {
            let p = PUNCTS.iter().find(|p| s[i..].starts_with(**p))?;
            toks.push(Tok::Punct(p));
            i += p.len();
        }
    }
    Some(toks)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    at: usize,
    fields: &'a [Field],
}

/// Binary operators by C precedence, loosest first (after `?:`).
const LEVELS: [&[&str]; 10] = [
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", "<=", ">", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

/// The precedence level of a binary operator in [`LEVELS`] (higher binds
/// tighter).
fn level_of(op: &str) -> usize {
    LEVELS
        .iter()
        .position(|ops| ops.contains(&op))
        .unwrap_or(LEVELS.len())
}

/// `l op (r)`, as libtraceevent builds it: its parser rotates a
/// parenthesized right operand whose operator binds looser than `op`, so
/// `x & (A | B | C)` evaluates as `((x & A) | B) | C`. perf prints what
/// that computes (`flags=D|P|I` of timer_start with no flag set).
fn rotate(op: &'static str, l: Expr, r: Expr) -> Expr {
    match r {
        Expr::Binary(rop, rl, rr) if level_of(rop) < level_of(op) => {
            Expr::Binary(rop, Box::new(rotate(op, l, *rl)), rr)
        }
        r => Expr::Binary(op, Box::new(l), Box::new(r)),
    }
}

/// (size in bytes, signed) of a C integer type named by `words`.
fn int_type(words: &[String]) -> Option<(usize, bool)> {
    let unsigned = words.iter().any(|w| w == "unsigned");
    let signed = !unsigned;
    let longs = words.iter().filter(|w| *w == "long").count();
    let base = words
        .iter()
        .find(|w| !matches!(w.as_str(), "unsigned" | "signed" | "const" | "long"))
        .map(String::as_str);
    Some(match base {
        None if longs > 0 => (8, signed),
        None => (4, signed),
        Some("int") if longs > 0 => (8, signed),
        Some("int") => (4, signed),
        Some("char") => (1, signed),
        Some("short") => (2, signed),
        Some("bool" | "_Bool") => (1, false),
        Some("u8") => (1, false),
        Some("s8") => (1, true),
        Some("u16") => (2, false),
        Some("s16") => (2, true),
        Some("u32" | "uint32_t" | "__u32") => (4, false),
        Some("s32" | "int32_t" | "__s32") => (4, true),
        Some("pid_t") => (4, true),
        Some("u64" | "uint64_t" | "__u64" | "size_t") => (8, false),
        Some("s64" | "int64_t" | "__s64" | "ssize_t" | "loff_t") => (8, true),
        _ => return None,
    })
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Punct(q)) if *q == p) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expr(&mut self) -> Option<Expr> {
        let c = self.binary(0)?;
        if self.eat_punct("?") {
            let a = self.expr()?;
            if !self.eat_punct(":") {
                return None;
            }
            let b = self.expr()?;
            return Some(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Some(c)
    }

    fn binary(&mut self, level: usize) -> Option<Expr> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut l = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(Tok::Punct(p)) => LEVELS[level].iter().find(|o| *o == p).copied(),
                _ => None,
            };
            let Some(op) = op else {
                return Some(l);
            };
            self.at += 1;
            let r = self.binary(level + 1)?;
            l = match r {
                Expr::Group(inner) => rotate(op, l, *inner),
                r => Expr::Binary(op, Box::new(l), Box::new(r)),
            };
        }
    }

    fn unary(&mut self) -> Option<Expr> {
        for op in ["-", "!", "~", "+"] {
            if self.eat_punct(op) {
                return Some(Expr::Unary(op.as_bytes()[0], Box::new(self.unary()?)));
            }
        }
        // A cast: `(` type words `)`.
        if matches!(self.peek(), Some(Tok::Punct("("))) {
            let save = self.at;
            self.at += 1;
            let mut words = Vec::new();
            while let Some(Tok::Ident(w)) = self.peek() {
                words.push(w.clone());
                self.at += 1;
            }
            let pointer = self.eat_punct("*");
            if !words.is_empty() && words[0] != "REC" && self.eat_punct(")") {
                let known = if pointer {
                    Some((8, false))
                } else {
                    int_type(&words)
                };
                // A type this table does not know (`gfp_t`) casts when an
                // operand follows; it keeps the value.
                let operand_follows = matches!(
                    self.peek(),
                    Some(Tok::Punct("(") | Tok::Num(_) | Tok::Ident(_))
                );
                if let Some((size, signed)) = known {
                    let inner = self.unary()?;
                    return Some(Expr::Cast(size, signed, Box::new(inner)));
                }
                if operand_follows {
                    return self.unary();
                }
            }
            self.at = save;
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Option<Expr> {
        match self.next()? {
            Tok::Num(n) => Some(Expr::Num(n)),
            Tok::Str(s) => Some(Expr::Str(s)),
            Tok::Punct("(") => {
                let e = self.expr()?;
                self.eat_punct(")").then(|| Expr::Group(Box::new(e)))
            }
            Tok::Ident(id) if id == "REC" => {
                if !self.eat_punct("->") {
                    return None;
                }
                let Some(Tok::Ident(name)) = self.next() else {
                    return None;
                };
                let i = self.fields.iter().position(|f| f.name == name)?;
                if self.eat_punct("[") {
                    let idx = self.expr()?;
                    if !self.eat_punct("]") {
                        return None;
                    }
                    return Some(Expr::Index(i, Box::new(idx)));
                }
                Some(Expr::Field(i))
            }
            Tok::Ident(f) => {
                if !self.eat_punct("(") {
                    // A kernel variable or constant the format names
                    // (`jiffies`, `vmemmap_base`): libtraceevent reads it
                    // as the number 0.
                    return Some(Expr::Num(0));
                }
                match f.as_str() {
                    "__builtin_expect" => {
                        let e = self.expr()?;
                        if !self.eat_punct(",") {
                            return None;
                        }
                        self.expr()?;
                        self.eat_punct(")").then_some(e)
                    }
                    "__get_str" => {
                        let Some(Tok::Ident(name)) = self.next() else {
                            return None;
                        };
                        let i = self.fields.iter().position(|f| f.name == name)?;
                        self.eat_punct(")").then_some(Expr::GetStr(i))
                    }
                    "__print_flags" | "__print_symbolic" => {
                        let v = self.expr()?;
                        let mut delim = String::new();
                        if f == "__print_flags" {
                            if !self.eat_punct(",") {
                                return None;
                            }
                            match self.next()? {
                                Tok::Str(s) => delim = s,
                                _ => return None,
                            }
                        }
                        let mut table = Vec::new();
                        while self.eat_punct(",") {
                            if !self.eat_punct("{") {
                                return None;
                            }
                            // libtraceevent's eval_flag: a name it cannot
                            // evaluate (an enum constant) is -1, which
                            // matches nothing.
                            let value = match self.peek() {
                                Some(Tok::Ident(id))
                                    if id != "REC"
                                        && matches!(
                                            self.toks.get(self.at + 1),
                                            Some(Tok::Punct(","))
                                        ) =>
                                {
                                    self.at += 1;
                                    Expr::Num(u64::MAX)
                                }
                                _ => self.expr()?,
                            };
                            if !self.eat_punct(",") {
                                return None;
                            }
                            // `{ 0, NULL }` ends some tables: not a flag.
                            let name = match self.peek() {
                                Some(Tok::Str(s)) => {
                                    let s = s.clone();
                                    self.at += 1;
                                    Some(s)
                                }
                                _ => {
                                    self.expr()?;
                                    None
                                }
                            };
                            if !self.eat_punct("}") {
                                return None;
                            }
                            if let Some(name) = name {
                                table.push((value, name));
                            }
                        }
                        if !self.eat_punct(")") {
                            return None;
                        }
                        Some(if f == "__print_flags" {
                            Expr::Flags(Box::new(v), delim, table)
                        } else {
                            Expr::Symbolic(Box::new(v), table)
                        })
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 316\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n\
print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" }, { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, { 0x00000010, \"X\" }, { 0x00000020, \"Z\" }, { 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio\n";

    fn switch_record(prev_state: u64) -> Vec<u8> {
        let mut r = vec![0u8; 64];
        r[8..12].copy_from_slice(b"perf");
        r[24..28].copy_from_slice(&9268i32.to_le_bytes());
        r[28..32].copy_from_slice(&120i32.to_le_bytes());
        r[32..40].copy_from_slice(&prev_state.to_le_bytes());
        r[40..51].copy_from_slice(b"migration/0");
        r[56..60].copy_from_slice(&18i32.to_le_bytes());
        r
    }

    #[test]
    fn sched_switch_like_libtraceevent() {
        let (id, ev) = parse_event(SWITCH).expect("parses");
        assert_eq!(id, 316);
        let t = Tracepoints {
            events: [(id, ev)].into_iter().collect(),
            big_endian: false,
            printk: HashMap::default(),
        };
        for (state, shown) in [(0, "R"), (1, "S"), (2, "D"), (0x100, "R+"), (3, "S|D")] {
            assert_eq!(
                t.format(316, &switch_record(state), &mut |_| None)
                    .as_deref(),
                Some(&*format!(
                    "prev_comm=perf prev_pid=9268 prev_prio=120 prev_state={shown} ==> \
                     next_comm=migration/0 next_pid=18 next_prio=0"
                ))
            );
        }
    }

    #[test]
    fn printf_conversions() {
        let ev = Event {
            fields: Vec::new(),
            first_own: 0,
            print: None,
        };
        let printk = [(0x10, "Start RCU core".to_string())].into_iter().collect();
        let r = Record {
            ev: &ev,
            raw: &[],
            big_endian: false,
            printk: &printk,
        };
        let mut funcs = |a: u64| (a == 0x1010).then(|| ("wb_workfn".to_string(), 0x1000));
        let args = [
            Expr::Num(255),
            Expr::Num(u64::MAX),
            Expr::Num(7),
            Expr::Str("ab".into()),
            Expr::Num(0),
        ];
        assert_eq!(
            r.printf(b"%x %ld %05d|%-4s|%p %%", &args, &mut funcs)
                .as_deref(),
            Some("ff -1 00007|ab  |(nil) %")
        );
        let mut one = |e: Expr, f: &[u8]| r.printf(f, &[e], &mut funcs);
        assert_eq!(one(Expr::Num(u64::MAX), b"%d").as_deref(), Some("-1"));
        assert_eq!(
            one(Expr::Num(u64::MAX), b"%u").as_deref(),
            Some("4294967295")
        );
        assert_eq!(
            one(Expr::Num(0x10), b"%s").as_deref(),
            Some("Start RCU core")
        );
        assert_eq!(
            one(Expr::Num(0x1010), b"%pS").as_deref(),
            Some("wb_workfn+0x10")
        );
        assert_eq!(one(Expr::Num(0x1010), b"%ps").as_deref(), Some("wb_workfn"));
        assert_eq!(one(Expr::Num(0x2000), b"%ps").as_deref(), Some("0x2000"));
    }
}
