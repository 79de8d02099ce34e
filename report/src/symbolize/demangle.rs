//! Symbol demangling matching `perf report` (perf 6.1, non-verbose).
//!
//! perf demangles C++ with libiberty and no options (`DMGL_NO_OPTS`), so the
//! parameter list is omitted: `_ZN2ns3BoxIlE4workEi` → `ns::Box<long>::work`.
//! Rust symbols (legacy `_ZN…17h<hash>E` and v0 `_R…`) print without the hash
//! and without crate disambiguators: `r::work`, `<r::inner::S>::go`.

/// Demangles `name`, or returns `None` when it is not a mangled name
/// (plain C symbols) or cannot be demangled.
pub fn demangle(name: &str) -> Option<String> {
    demangle_with(name, false)
}

/// [`demangle`], or with `params` as perf's `-v` does
/// (`DMGL_PARAMS | DMGL_ANSI`): a C++ function with its parameters (and
/// a template's return type).
pub(crate) fn demangle_with(name: &str, params: bool) -> Option<String> {
    if name.starts_with("_R") {
        // libiberty's rust_demangle stops a v0 name at its first '.', so
        // LLVM/BOLT suffixes (`.llvm.123`, `.warm`, `.cold`) do not print.
        let bare = name.split('.').next().unwrap_or(name);
        return rustc_demangle::try_demangle(bare)
            .ok()
            .map(|d| format!("{d:#}"));
    }
    if !name.starts_with("_Z") {
        return None;
    }
    if let Some(path) = rust_legacy_path(name) {
        // libiberty drops whatever suffix follows the path (`.llvm.123`,
        // `.0`); rustc_demangle keeps all but LLVM's.
        if let Ok(d) = rustc_demangle::try_demangle(path) {
            return Some(format!("{d:#}"));
        }
    }
    // Special names (vtables, VTTs, typeinfo, thunks, guard variables)
    // print the same with and without parameters, in libiberty's words.
    let special = name[2..].starts_with(['T', 'G']);
    if params && !special {
        if let Some(full) = cpp(name, true) {
            return Some(full);
        }
    }
    demangle_cpp(name)
}

/// libiberty's `cplus_demangle(name, 0)`: the top-level function's
/// parameters, return type and qualifiers are omitted, but an encoding
/// nested in a special name (thunks, transaction clones) prints in full.
fn demangle_cpp(name: &str) -> Option<String> {
    let body = &name[2..];
    // Special names cpp_demangle prints in its own style.
    for (tag, prefix) in [("TV", "vtable for "), ("TT", "VTT for ")] {
        if let Some(ty) = body.strip_prefix(tag) {
            let t = cpp(&format!("_ZTI{ty}"), false)?;
            return Some(format!("{prefix}{}", t.strip_prefix("typeinfo for ")?));
        }
    }
    // typeinfo of a function type: `typeinfo for R (A)`.
    for (tag, prefix) in [("TIF", "typeinfo for "), ("TSF", "typeinfo name for ")] {
        if body.starts_with(tag) {
            let t = cpp(name, false)?;
            let ty = t.strip_prefix(prefix)?;
            // Seen as a template argument, where function types are found.
            let spaced = function_types(&format!("<{ty}"));
            return Some(format!("{prefix}{}", &spaced[1..]));
        }
    }
    if let Some(rest) = body.strip_prefix("GTt") {
        let rest = rest.split('.').next().unwrap_or(rest);
        return Some(format!(
            "transaction clone for {}",
            cpp(&format!("_Z{rest}"), true)?
        ));
    }
    if let Some(rest) = body.strip_prefix('T') {
        let (prefix, offsets) = match rest.as_bytes().first() {
            Some(b'h') => ("non-virtual thunk to ", 1),
            Some(b'v') => ("virtual thunk to ", 2),
            Some(b'c') => ("covariant return thunk to ", 0),
            _ => ("", 0),
        };
        if !prefix.is_empty() {
            let mut r = &rest[1..];
            if offsets == 0 {
                // `Tc` call-offset call-offset: each `h` nv or `v` v.
                for _ in 0..2 {
                    let n = match r.as_bytes().first() {
                        Some(b'h') => 1,
                        Some(b'v') => 2,
                        _ => return None,
                    };
                    r = skip_offsets(&r[1..], n)?;
                }
            } else {
                r = skip_offsets(r, offsets)?;
            }
            // Clone suffixes (`.llvm.123`) are only printed with
            // DMGL_PARAMS, which applies to the nested encoding alone.
            let r = r.split('.').next().unwrap_or(r);
            return Some(format!("{prefix}{}", cpp(&format!("_Z{r}"), true)?));
        }
    }
    let mut out = cpp(name, false).or_else(|| name_of_unparsed_signature(name))?;
    if !body.starts_with('T') && !body.starts_with('G') {
        // Top-level ref-qualifiers go with the parameters.
        for q in [" &&", " &"] {
            if let Some(s) = out.strip_suffix(q) {
                out.truncate(s.len());
                break;
            }
        }
        // libiberty's d_encoding also drops the function qualifiers of a
        // top-level local name's entity (`f()::$_0::operator() const`).
        if body.starts_with('Z') {
            while let Some(s) = [" const", " volatile", " restrict"]
                .iter()
                .find_map(|q| out.strip_suffix(q))
            {
                let n = s.len();
                out.truncate(n);
            }
        }
    }
    Some(out)
}

/// cpp_demangle rejects the unresolved names of GCC's older mangling,
/// `sr <type> <name>` (`XsrNS_10int_traitsIS5_EE14precision_typeE`, where
/// the ABI now says `srN`), which GCC still writes in the return and
/// parameter types of function templates; libiberty reads both. Those
/// types are not printed without parameters, so the name alone is
/// demangled: the longest `_Z<name>` prefix that parses. A cut right before
/// template arguments or an ABI tag would leave the name unfinished.
fn name_of_unparsed_signature(name: &str) -> Option<String> {
    let mangled = name.split('.').next()?;
    if !mangled.contains("sr") {
        return None;
    }
    let bytes = mangled.as_bytes();
    (3..bytes.len())
        .rev()
        .filter(|&end| !matches!(bytes[end], b'I' | b'B'))
        .find_map(|end| cpp(&mangled[..end], false))
}

/// Skips `n` `[n]<number>_` call offsets.
fn skip_offsets(mut s: &str, n: usize) -> Option<&str> {
    for _ in 0..n {
        let t = s.strip_prefix('n').unwrap_or(s);
        let d = t.bytes().take_while(u8::is_ascii_digit).count();
        s = t.get(d..)?.strip_prefix('_').filter(|_| d > 0)?;
    }
    Some(s)
}

/// cpp_demangle with or without the parameter list, in libiberty's style.
fn cpp(name: &str, params: bool) -> Option<String> {
    let sym = cpp_demangle::Symbol::new(name.as_bytes()).ok()?;
    let mut opts = cpp_demangle::DemangleOptions::new();
    if !params {
        opts = opts.no_params().no_return_type();
    }
    let out = sym.demangle(&opts).ok()?;
    Some(libiberty_style(&out, name))
}

/// Rewrites cpp_demangle's output where libiberty's printer differs.
fn libiberty_style(s: &str, mangled: &str) -> String {
    let s = integer_literals(s).replace("std::nullptr_t", "decltype(nullptr)");
    let s = std_abbreviations(&s, mangled);
    let s = misplaced_qualifiers(&s);
    let s = function_types(&s);
    let s = function_addresses(&s);
    let s = operator_template_calls(&s);
    // An empty template parameter pack prints nothing; libiberty then takes
    // back the `, ` before it, and as its last character is still a space,
    // a closing `>` after a `>` gets no space: `A<B<C>>`. Of trailing
    // empty packs, each takes back its own (`<int, 0ul>` for `int, 0ul, ,`).
    let mut s = s;
    while s.contains(", >") {
        s = s.replace(", >", ">");
    }
    s
}

/// cpp_demangle prints a space between an operator template's arguments
/// and its parameters (`std::operator< <char> (char const&)`); libiberty
/// does not.
fn operator_template_calls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("operator") {
        let (before, from) = rest.split_at(at + "operator".len());
        out.push_str(before);
        // The operator's own characters, then ` <` opens its arguments.
        let symbol = from
            .find(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ' ')
            .unwrap_or(from.len());
        let Some(args) = from[symbol..].strip_prefix(" <") else {
            rest = from;
            continue;
        };
        let mut depth = 1;
        let mut end = None;
        for (i, c) in args.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            rest = from;
            continue;
        };
        out.push_str(&from[..symbol]);
        out.push_str(" <");
        out.push_str(&args[..end]);
        rest = &args[end..];
        if let Some(params) = rest.strip_prefix(" (") {
            out.push('(');
            rest = params;
        }
    }
    out.push_str(rest);
    out
}

/// The standard abbreviations `Ss`, `Si`, `So`, `Sd`: libiberty prints
/// them short (`std::string`) except right before a constructor or
/// destructor (`std::basic_string<char, std::char_traits<char>,
/// std::allocator<char> >::basic_string`); cpp_demangle does otherwise.
fn std_abbreviations(s: &str, mangled: &str) -> String {
    const ABBREVIATIONS: [(&str, &str, &str, &str, &str); 4] = [
        (
            "Ss",
            "std::string",
            "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
            "string",
            "basic_string",
        ),
        (
            "Si",
            "std::istream",
            "std::basic_istream<char, std::char_traits<char> >",
            "istream",
            "basic_istream",
        ),
        (
            "So",
            "std::ostream",
            "std::basic_ostream<char, std::char_traits<char> >",
            "ostream",
            "basic_ostream",
        ),
        (
            "Sd",
            "std::iostream",
            "std::basic_iostream<char, std::char_traits<char> >",
            "iostream",
            "basic_iostream",
        ),
    ];
    if !s.contains("std::") {
        return s.to_string();
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    'outer: while i < s.len() {
        let rest = &s[i..];
        let boundary = !out.ends_with(ident) && !out.ends_with("::");
        if boundary && rest.starts_with("std::") {
            // The full form spelled out in the mangled name (not by its
            // abbreviation) stays full.
            let used = ABBREVIATIONS
                .iter()
                .filter(|(code, ..)| mangled.contains(code));
            for &(_, short, full, short_last, last) in used {
                for form in [full, short] {
                    let Some(after) = rest.strip_prefix(form) else {
                        continue;
                    };
                    if form == short && after.starts_with(ident) {
                        continue;
                    }
                    // A constructor or destructor name after it.
                    let structor = after.strip_prefix("::").and_then(|a| {
                        let tilde = a.starts_with('~');
                        let a = a.trim_start_matches('~');
                        [short_last, last].into_iter().find_map(|n| {
                            a.strip_prefix(n)
                                .filter(|t| !t.starts_with(ident))
                                .map(|t| (tilde, t))
                        })
                    });
                    match structor {
                        Some((tilde, t)) => {
                            out.push_str(full);
                            out.push_str(if tilde { "::~" } else { "::" });
                            out.push_str(last);
                            i = s.len() - t.len();
                        }
                        None => {
                            out.push_str(short);
                            i += form.len();
                        }
                    }
                    continue 'outer;
                }
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// cpp_demangle sometimes prints the pointer, reference or cv-qualifiers of
/// a nested type on its prefix: `A&::B`, `A*::B::C`, `A const::B*`;
/// libiberty prints them after the whole name: `A::B&`, `A::B::C*`,
/// `A::B const*`. (`f() const::x`, a local name, follows a `)`.)
fn misplaced_qualifiers(s: &str) -> String {
    const QUALIFIERS: [&str; 4] = [" const", " volatile", "*", "&"];
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut s = s.to_string();
    let mut from = 0;
    while let Some(found) = s[from..].find("::") {
        let i = from + found;
        from = i + 2;
        let mut start = i;
        while let Some(q) = QUALIFIERS.iter().find(|q| s[..start].ends_with(*q)) {
            start -= q.len();
        }
        let owner = s[..start].chars().next_back();
        if start == i || !owner.is_some_and(|c| ident(c) || c == '>') {
            continue;
        }
        // The rest of the qualified name: `B`, `B<T>::C`, …
        let mut end = i;
        while let Some(rest) = s[end..].strip_prefix("::") {
            let len = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
            if len == 0 {
                break;
            }
            end += 2 + len;
            if s[end..].starts_with('<') {
                end += closing(&s[end + 1..], '<', '>').map_or(0, |close| close + 2);
            }
        }
        if end == i {
            continue;
        }
        let qualifiers = s[start..i].to_string();
        let name = s[i..end].to_string();
        s.replace_range(start..end, &format!("{name}{qualifiers}"));
        from = start;
    }
    s
}

/// A function type prints `R (A)` in libiberty, `R(A)` in cpp_demangle
/// (which does put the space after builtin return types). A parenthesis
/// after a name is a function type unless it closes a local function
/// name (`f(int) const::x`) or follows a keyword.
fn function_types(s: &str) -> String {
    const KEYWORDS: [&str; 9] = [
        "operator", "decltype", "sizeof", "alignof", "noexcept", "lambda", "typeid", "throw",
        "__vector",
    ];
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len() + 8);
    let mut last = 0;
    for (i, &c) in b.iter().enumerate() {
        if c != b'(' || i == 0 {
            continue;
        }
        let p = b[i - 1];
        if !(p.is_ascii_alphanumeric() || matches!(p, b'_' | b'>' | b'*' | b'&')) {
            continue;
        }
        if KEYWORDS.iter().any(|k| s[..i].ends_with(k)) {
            continue;
        }
        // A function type returning a function pointer: `void (*(int))(long)`.
        if s[..i].ends_with("(*") || s[..i].ends_with("(&") {
            continue;
        }
        let Some(end) = closing(&s[i + 1..], '(', ')').map(|c| i + 1 + c) else {
            break;
        };
        let mut after = &s[end + 1..];
        loop {
            let t = [" const", " volatile", " &&", " &"]
                .iter()
                .find_map(|q| after.strip_prefix(q));
            match t {
                Some(t) => after = t,
                None => break,
            }
        }
        let function_name = after.starts_with("::") || after.starts_with('#');
        // Only inside template arguments, where the top-level parameter
        // lists of thunks and clones cannot be.
        let depth_angle = s[..i].matches('<').count() > s[..i].matches('>').count();
        if function_name || !depth_angle {
            continue;
        }
        out.push_str(&s[last..i]);
        out.push(' ');
        last = i;
    }
    out.push_str(&s[last..]);
    out
}

/// A template argument that is the address of a function prints
/// `&f (int)` after [`function_types`]; libiberty prints `&(f(int))`, and
/// `&ns::f` for a qualified name (`d_print_comp`, `DEMANGLE_COMPONENT_UNARY`:
/// it drops the argument list of `&` on a qualified name and puts other
/// operands in parentheses).
fn function_addresses(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        let (before, at) = rest.split_at(i);
        out.push_str(before);
        let argument_start = out.ends_with('<') || out.ends_with(", ");
        let mut name_len = 0;
        loop {
            let rest = &at[1 + name_len..];
            if let Some(r) = rest.strip_prefix("(anonymous namespace)") {
                name_len = at.len() - 1 - r.len();
                continue;
            }
            let len = rest.find(|c: char| !name_char(c)).unwrap_or(rest.len());
            if len == 0 {
                break;
            }
            name_len += len;
        }
        let name = &at[1..1 + name_len];
        let after_name = &at[1 + name_len..];
        let params = after_name.strip_prefix(' ').unwrap_or(after_name);
        let closing = params
            .strip_prefix('(')
            .and_then(|p| closing(p, '(', ')').map(|end| (&p[..end], &p[end + 1..])));
        match closing {
            Some((args, tail))
                if argument_start
                    && !name.is_empty()
                    && (tail.starts_with(',') || tail.starts_with('>')) =>
            {
                if name.contains("::") {
                    out.push_str(&format!("&{name}"));
                } else {
                    out.push_str(&format!("&({name}({args}))"));
                }
                rest = tail;
            }
            _ => {
                out.push('&');
                rest = &at[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The index in `s` of the `close` matching an `open` just before `s`.
fn closing(s: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            if depth == 0 {
                return Some(i);
            }
            depth -= 1;
        }
    }
    None
}

/// `(unsigned int)8` → `8u`: libiberty prints literals of int-like builtin
/// types with a suffix (`d_print_comp`, `DEMANGLE_COMPONENT_LITERAL`).
fn integer_literals(s: &str) -> String {
    const SUFFIXES: [(&str, &str); 6] = [
        ("(int)", ""),
        ("(unsigned int)", "u"),
        ("(long)", "l"),
        ("(unsigned long)", "ul"),
        ("(long long)", "ll"),
        ("(unsigned long long)", "ull"),
    ];
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    'outer: while let Some(i) = rest.find('(') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        // Only after a delimiter: `f(long)` is a parameter list.
        let prev = out.chars().last();
        if matches!(prev, None | Some('<' | ' ' | '(' | '-' | '[' | ',')) {
            for (ty, suffix) in SUFFIXES {
                if let Some(num) = tail.strip_prefix(ty) {
                    let neg = num.starts_with('-');
                    let digits = num[neg as usize..]
                        .bytes()
                        .take_while(u8::is_ascii_digit)
                        .count();
                    if digits > 0 {
                        let len = neg as usize + digits;
                        out.push_str(&num[..len]);
                        out.push_str(suffix);
                        rest = &num[len..];
                        continue 'outer;
                    }
                }
            }
            if let Some(b) = tail.strip_prefix("(bool)") {
                if let Some(r) = b.strip_prefix('0') {
                    out.push_str("false");
                    rest = r;
                    continue;
                }
                if let Some(r) = b.strip_prefix('1') {
                    out.push_str("true");
                    rest = r;
                    continue;
                }
            }
        }
        out.push('(');
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

/// Rust legacy mangling: `_ZN` … `17h` + 16 hex digits + `E`, optionally
/// followed by a suffix such as `.llvm.123`; returns `name` up to that `E`.
fn rust_legacy_path(name: &str) -> Option<&str> {
    // Walk the `<len><ident>` path rather than cutting at the first '.':
    // legacy identifiers spell `::` inside generics as `..`.
    let mut rest = name.strip_prefix("_ZN")?;
    let mut last = "";
    loop {
        if let Some(after) = rest.strip_prefix('E') {
            // Nothing, or a `.llvm.NNN`-style suffix, may follow.
            let legacy = (after.is_empty() || after.starts_with('.'))
                && last.len() == 17
                && last.starts_with('h')
                && last[1..].bytes().all(|b| b.is_ascii_hexdigit());
            return legacy.then(|| &name[..name.len() - after.len()]);
        }
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let len = rest[..digits].parse::<usize>().ok()?;
        let ident = rest.get(digits..digits + len)?;
        last = ident;
        rest = &rest[digits + len..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `name\tdemangled` for each line of `$DEMANGLE_IN` to
    /// `$DEMANGLE_OUT` (to compare with libiberty's `cplus_demangle(name, 0)`,
    /// what perf 6.1 calls).
    #[test]
    #[ignore]
    fn demangle_file() {
        let (Ok(i), Ok(o)) = (std::env::var("DEMANGLE_IN"), std::env::var("DEMANGLE_OUT")) else {
            return;
        };
        let text = std::fs::read_to_string(i).expect("read");
        let mut out = String::new();
        for n in text.lines() {
            out.push_str(n);
            out.push('\t');
            out.push_str(
                &demangle_with(n, std::env::var_os("DEMANGLE_PARAMS").is_some())
                    .unwrap_or_default(),
            );
            out.push('\n');
        }
        std::fs::write(o, out).expect("write");
    }

    /// Operator templates: libiberty's printer puts a space between
    /// `operator<` and its template arguments, none before the parameters
    /// (c++filt's output).
    #[test]
    fn operator_templates_with_parameters() {
        for (mangled, expected) in [
            (
                "_ZStltIcSt11char_traitsIcESaIcEEbRKNSt7__cxx1112basic_stringIT_T0_T1_EESA_",
                "bool std::operator< <char, std::char_traits<char>, std::allocator<char> >\
                 (std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, \
                 std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
            ),
            (
                "_ZStlsISt11char_traitsIcEERSt13basic_ostreamIcT_ES5_PKc",
                "std::basic_ostream<char, std::char_traits<char> >& \
                 std::operator<< <std::char_traits<char> >\
                 (std::basic_ostream<char, std::char_traits<char> >&, char const*)",
            ),
        ] {
            assert_eq!(demangle_with(mangled, true).as_deref(), Some(expected));
        }
        assert_eq!(
            demangle_with(
                "_ZStltIcSt11char_traitsIcESaIcEEbRKNSt7__cxx1112basic_stringIT_T0_T1_EESA_",
                false
            )
            .as_deref(),
            Some("std::operator< <char, std::char_traits<char>, std::allocator<char> >")
        );
    }

    /// Trailing empty parameter packs print nothing, nor their commas
    /// (perf 6.1's names, libiberty's `cplus_demangle(name, 0)`).
    #[test]
    fn trailing_empty_packs() {
        assert_eq!(
            demangle(
                "_ZNSt4pairIKiNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEEC2IJRS0_EJLm0EE\
                 JEJEEERSt5tupleIJDpT_EERSA_IJDpT1_EESt12_Index_tupleIJXspT0_EEESJ_IJXspT2_EEE"
            )
            .as_deref(),
            Some(
                "std::pair<int const, std::__cxx11::basic_string<char, std::char_traits<char>, \
                 std::allocator<char> > >::pair<int const&, 0ul>"
            )
        );
    }

    /// Special names print the same under `-v` (libiberty's words, not
    /// cpp_demangle's `{vtable(...)}`).
    #[test]
    fn special_names_with_parameters() {
        for (mangled, expected) in [
            ("_ZTVN2ns3BoxIlEE", "vtable for ns::Box<long>"),
            ("_ZTTN2ns3BoxIlEE", "VTT for ns::Box<long>"),
            ("_ZTIN2ns3BoxIlEE", "typeinfo for ns::Box<long>"),
        ] {
            assert_eq!(demangle(mangled).as_deref(), Some(expected), "{mangled}");
            assert_eq!(
                demangle_with(mangled, true).as_deref(),
                Some(expected),
                "{mangled} -v"
            );
        }
    }

    #[test]
    fn rust_and_cpp() {
        assert_eq!(
            demangle("_ZN1r4work17h6d3179a7eaba4829E").as_deref(),
            Some("r::work")
        );
        // `..` inside a generic path, and an LLVM suffix.
        assert_eq!(
            demangle("_ZN102_$LT$core..str..iter..CharIndices$u20$as$u20$core..iter..traits..double_ended..DoubleEndedIterator$GT$9next_back17h3e2acc4573b5afcaE").as_deref(),
            Some("<core::str::iter::CharIndices as core::iter::traits::double_ended::DoubleEndedIterator>::next_back")
        );
        assert_eq!(
            demangle("_ZN1r4work17h6d3179a7eaba4829E.llvm.123").as_deref(),
            Some("r::work")
        );
        assert_eq!(
            demangle("_RINvCs6GmmlP4bgsG_1r4workmEB2_").as_deref(),
            Some("r::work::<u32>")
        );
        assert_eq!(
            demangle("_RNvMNtCs6GmmlP4bgsG_1r5innerNtB2_1S2go").as_deref(),
            Some("<r::inner::S>::go")
        );
        assert_eq!(
            demangle("_ZN2ns3BoxIlE4workEi").as_deref(),
            Some("ns::Box<long>::work")
        );
        assert_eq!(
            demangle("_Z4spinRSt6vectorIiSaIiEEi").as_deref(),
            Some("spin")
        );
        // GCC's older `sr <type> <name>` in the signature (cc1's wide-int
        // templates), with and without a clone suffix; libiberty's answers.
        assert_eq!(
            demangle("_ZN2wi7lrshiftI16generic_wide_intI16wide_int_storageES3_EENS_13binary_traitsIT_S5_XsrNS_10int_traitsIS5_EE14precision_typeEXsrS7_14precision_typeEE11result_typeERKS5_RKT0_").as_deref(),
            Some("wi::lrshift<generic_wide_int<wide_int_storage>, generic_wide_int<wide_int_storage> >")
        );
        assert_eq!(
            demangle("_Z10multiple_pILj1EljEN10if_nonpolyIT1_bXsr15poly_int_traitsIS1_E7is_polyEE4typeERK12poly_int_podIXT_ET0_ES1_.isra.0").as_deref(),
            Some("multiple_p<1u, long, unsigned int>")
        );
        // Not a name to cut short: libiberty cannot read it either.
        assert_eq!(demangle("_Z1AIXsr1BIT_E1bEE1fEv"), None);
        // Suffixes after a legacy Rust path; vector types; qualifiers that
        // cpp_demangle leaves on a nested type's prefix; a function type
        // returning a function pointer.
        assert_eq!(
            demangle("_ZN3log6LOGGER17h495b80f51a89d58fE.0").as_deref(),
            Some("log::LOGGER")
        );
        assert_eq!(
            demangle("_Z10sort_n_vecI10zmm_vectorIdELi32EDv8_dEvPNT_6type_tEi").as_deref(),
            Some("sort_n_vec<zmm_vector<double>, 32, double __vector(8)>")
        );
        assert_eq!(
            demangle("_ZN4llvm15SmallVectorImplISt4pairIPKN5clang13CallGraphNodeEPKNS3_10CallRecordEEEaSEOSA_").as_deref(),
            Some("llvm::SmallVectorImpl<std::pair<clang::CallGraphNode const*, clang::CallGraphNode::CallRecord const*> >::operator=")
        );
        assert_eq!(
            demangle("_ZN1AISt5_BindIFPFviEcEEE1fEv").as_deref(),
            Some("A<std::_Bind<void (*(char))(int)> >::f")
        );
        // A function's address as a template argument.
        assert_eq!(
            demangle("_Z1fIXadL_Z1gPFviEEELi3EEvv").as_deref(),
            Some("f<&(g(void (*)(int))), 3>")
        );
        assert_eq!(
            demangle("_Z1fIiXadL_ZN2ns1gEiEEEvv").as_deref(),
            Some("f<int, &ns::g>")
        );
        // libiberty's style (perf 6.1): literal suffixes, empty packs,
        // special names, std abbreviations.
        assert_eq!(
            demangle("_ZN4llvm11SmallVectorIjLj8EE4growEm").as_deref(),
            Some("llvm::SmallVector<unsigned int, 8u>::grow")
        );
        assert_eq!(
            demangle("_ZTVSi").as_deref(),
            Some("vtable for std::istream")
        );
        assert_eq!(
            demangle("_ZNSsC1Ev").as_deref(),
            Some("std::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string")
        );
        assert_eq!(
            demangle("_ZGTtNKSt11logic_error4whatEv").as_deref(),
            Some("transaction clone for std::logic_error::what() const")
        );
        // As perf 6.1 prints them (libLLVM, BOLT-ed librustc_driver).
        assert_eq!(
            demangle("_ZZN4llvm16InstCombinerImpl13foldEqOfPartsEPNS_5ValueES2_bENK3$_0clES2_j.warm").as_deref(),
            Some("llvm::InstCombinerImpl::foldEqOfParts(llvm::Value*, llvm::Value*, bool)::$_0::operator()")
        );
        assert_eq!(
            demangle("_ZZN4llvm16InstCombinerImpl13foldEqOfPartsEPNS_5ValueES2_bENK3$_0clES2_j").as_deref(),
            Some("llvm::InstCombinerImpl::foldEqOfParts(llvm::Value*, llvm::Value*, bool)::$_0::operator()")
        );
        assert_eq!(
            demangle("_RNvMs_NtNtCs6mNkMfao1uC_12aho_corasick3nfa13noncontiguousNtB4_3NFA15init_full_state.llvm.1632233793469185361.warm").as_deref(),
            Some("<aho_corasick::nfa::noncontiguous::NFA>::init_full_state")
        );
        assert_eq!(
            demangle("_ZZNK3Foo3barEvE1x").as_deref(),
            Some("Foo::bar() const::x")
        );
        assert_eq!(
            demangle("_ZZ4mainENKUlvE_clEv").as_deref(),
            Some("main::{lambda()#1}::operator()")
        );
        assert_eq!(
            demangle("_ZThn32_N12_GLOBAL__N_113MPPassManagerD0Ev.llvm.2049004417421520800")
                .as_deref(),
            Some("non-virtual thunk to (anonymous namespace)::MPPassManager::~MPPassManager()")
        );
        assert_eq!(demangle("main"), None);
        assert_eq!(demangle("_Zgarbage"), None);
    }
}
