//! Symbol demangling matching `perf report` (perf 6.1, non-verbose).
//!
//! perf demangles C++ with libiberty and no options (`DMGL_NO_OPTS`), so the
//! parameter list is omitted: `_ZN2ns3BoxIlE4workEi` → `ns::Box<long>::work`.
//! Rust symbols (legacy `_ZN…17h<hash>E` and v0 `_R…`) print without the hash
//! and without crate disambiguators: `r::work`, `<r::inner::S>::go`.

/// Demangles `name`, or returns `None` when it is not a mangled name
/// (plain C symbols) or cannot be demangled.
pub fn demangle(name: &str) -> Option<String> {
    if name.starts_with("_R") {
        return rustc_demangle::try_demangle(name)
            .ok()
            .map(|d| format!("{d:#}"));
    }
    if !name.starts_with("_Z") {
        return None;
    }
    if is_rust_legacy(name) {
        if let Ok(d) = rustc_demangle::try_demangle(name) {
            return Some(format!("{d:#}"));
        }
    }
    let sym = cpp_demangle::Symbol::new(name.as_bytes()).ok()?;
    let opts = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    sym.demangle(&opts).ok()
}

/// Rust legacy mangling: `_ZN` … `17h` + 16 hex digits + `E`, optionally
/// followed by an LLVM suffix such as `.llvm.123`.
fn is_rust_legacy(name: &str) -> bool {
    let base = match name.find('.') {
        Some(i) => &name[..i],
        None => name,
    };
    let Some(body) = base.strip_prefix("_ZN").and_then(|b| b.strip_suffix('E')) else {
        return false;
    };
    match body.len().checked_sub(19).and_then(|i| body.get(i..)) {
        Some(tail) => tail.starts_with("17h") && tail[3..].bytes().all(|b| b.is_ascii_hexdigit()),
        None => false,
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
            out.push_str(&demangle(n).unwrap_or_default());
            out.push('\n');
        }
        std::fs::write(o, out).expect("write");
    }

    #[test]
    fn rust_and_cpp() {
        assert_eq!(
            demangle("_ZN1r4work17h6d3179a7eaba4829E").as_deref(),
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
        assert_eq!(demangle("main"), None);
        assert_eq!(demangle("_Zgarbage"), None);
    }
}
