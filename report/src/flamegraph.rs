//! A small, self-contained SVG flame graph writer for folded stacks
//! (`a;b;c count` lines, see [`crate::folded`]).
//!
//! The layout is the classic one of FlameGraph's `flamegraph.pl`: the root
//! (`all`) at the bottom, callees stacked above their callers, siblings in
//! alphabetical order, each frame's width proportional to its sample count.
//! Every frame is a `<g>` holding a `<title>` (`name (N samples, P%)`), a
//! `<rect>` and, when it fits, a `<text>` truncated to the frame's width
//! with `..`. Colours are a warm palette picked deterministically from a
//! hash of the name. No scripting: the SVG is static and valid XML.

use std::collections::BTreeMap;
use std::io::{self, Write};

/// Appearance of the graph.
#[derive(Clone, Debug)]
pub struct FlameOptions {
    pub title: String,
    /// Image width in pixels.
    pub width: u32,
    /// Height of one frame in pixels.
    pub frame_height: u32,
    /// Font size in pixels.
    pub font_size: f64,
    /// Frames narrower than this (pixels) are left out.
    pub min_width: f64,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions {
            title: "Flame Graph".into(),
            width: 1200,
            frame_height: 16,
            font_size: 12.0,
            min_width: 0.1,
        }
    }
}

/// One frame of the call tree.
#[derive(Debug, Default)]
struct Node {
    value: u64,
    children: BTreeMap<String, Node>,
}

impl Node {
    fn depth(&self) -> usize {
        self.children
            .values()
            .map(|c| 1 + c.depth())
            .max()
            .unwrap_or(0)
    }
}

/// A laid-out frame (pixels).
#[derive(Clone, Debug, PartialEq)]
pub struct Rect {
    pub name: String,
    pub count: u64,
    /// 0 = the root (`all`).
    pub depth: usize,
    pub x: f64,
    pub width: f64,
}

const XPAD: f64 = 10.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 20.0;

/// Lays the folded stacks out: frames with their x and width in pixels.
pub fn layout(folded: &[(String, u64)], opts: &FlameOptions) -> (Vec<Rect>, usize) {
    let mut root = Node::default();
    for (stack, count) in folded {
        if *count == 0 {
            continue;
        }
        root.value += count;
        let mut node = &mut root;
        for part in stack.split(';') {
            node = node.children.entry(part.to_string()).or_default();
            node.value += count;
        }
    }
    let mut rects = Vec::new();
    let total = root.value;
    let usable = f64::from(opts.width) - 2.0 * XPAD;
    if total == 0 {
        return (rects, 0);
    }
    let scale = usable / total as f64;
    fn walk(
        name: &str,
        node: &Node,
        depth: usize,
        x: f64,
        scale: f64,
        min: f64,
        out: &mut Vec<Rect>,
    ) {
        let width = node.value as f64 * scale;
        if width < min {
            return;
        }
        out.push(Rect {
            name: name.to_string(),
            count: node.value,
            depth,
            x,
            width,
        });
        let mut cx = x;
        for (n, c) in &node.children {
            walk(n, c, depth + 1, cx, scale, min, out);
            cx += c.value as f64 * scale;
        }
    }
    walk("all", &root, 0, XPAD, scale, opts.min_width, &mut rects);
    (rects, root.depth())
}

/// FNV-1a, for stable colours.
fn hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A warm colour (FlameGraph's "hot" palette) chosen by the name.
pub fn color(name: &str) -> (u8, u8, u8) {
    let h = hash(name);
    let v1 = (h & 0xff) as f64 / 255.0;
    let v2 = ((h >> 8) & 0xff) as f64 / 255.0;
    let v3 = ((h >> 16) & 0xff) as f64 / 255.0;
    let r = 205.0 + 50.0 * v3;
    let g = 230.0 * v1;
    let b = 55.0 * v2;
    (r as u8, g as u8, b as u8)
}

/// XML-escapes text and attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => o.push('?'),
            c => o.push(c),
        }
    }
    o
}

/// The label that fits `width` pixels: the whole name, or its start and
/// `..`, or nothing when fewer than three characters fit.
pub fn fit_text(name: &str, width: f64, font_size: f64) -> Option<String> {
    let char_w = font_size * 0.59;
    let fit = (width / char_w).floor() as usize;
    if fit < 3 {
        return None;
    }
    let n = name.chars().count();
    if n <= fit {
        return Some(name.to_string());
    }
    let mut s: String = name.chars().take(fit - 2).collect();
    s.push_str("..");
    Some(s)
}

/// Writes the SVG flame graph of `folded` to `out`.
pub fn write_svg<W: Write + ?Sized>(
    out: &mut W,
    folded: &[(String, u64)],
    opts: &FlameOptions,
) -> io::Result<()> {
    let (rects, depth) = layout(folded, opts);
    let total = rects.first().map_or(0, |r| r.count);
    let fh = f64::from(opts.frame_height);
    let height = TOP + (depth as f64 + 1.0) * fh + BOTTOM;
    let w = opts.width;
    writeln!(out, r#"<?xml version="1.0" standalone="no"?>"#)?;
    writeln!(
        out,
        r#"<svg version="1.1" width="{w}" height="{height:.0}" viewBox="0 0 {w} {height:.0}" xmlns="http://www.w3.org/2000/svg">"#
    )?;
    writeln!(
        out,
        r##"<defs><linearGradient id="background" y1="0" y2="1" x1="0" x2="0"><stop stop-color="#eeeeee" offset="5%"/><stop stop-color="#eeeeb0" offset="95%"/></linearGradient></defs>"##
    )?;
    writeln!(
        out,
        r#"<style type="text/css">text {{ font-family: Verdana, sans-serif; font-size: {}px; fill: rgb(0,0,0); }} .title {{ font-size: {}px; }}</style>"#,
        opts.font_size,
        opts.font_size + 5.0
    )?;
    writeln!(
        out,
        r#"<rect x="0" y="0" width="{w}" height="{height:.0}" fill="url(#background)"/>"#
    )?;
    writeln!(
        out,
        r#"<text class="title" x="{:.1}" y="24" text-anchor="middle">{}</text>"#,
        f64::from(w) / 2.0,
        escape(&opts.title)
    )?;
    if total == 0 {
        writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">No stacks</text>"#,
            f64::from(w) / 2.0,
            TOP + fh
        )?;
    }
    writeln!(out, r#"<g id="frames">"#)?;
    for r in &rects {
        let y = height - BOTTOM - (r.depth as f64 + 1.0) * fh;
        let pct = r.count as f64 * 100.0 / total as f64;
        let samples = if r.count == 1 { "sample" } else { "samples" };
        let name = escape(&r.name);
        let (cr, cg, cb) = if r.depth == 0 {
            (230, 100, 50)
        } else {
            color(&r.name)
        };
        writeln!(out, "<g>")?;
        writeln!(
            out,
            "<title>{name} ({} {samples}, {pct:.2}%)</title>",
            r.count
        )?;
        writeln!(
            out,
            r#"<rect x="{:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" fill="rgb({cr},{cg},{cb})" rx="2" ry="2"/>"#,
            r.x,
            r.width,
            fh - 1.0
        )?;
        if let Some(t) = fit_text(&r.name, r.width, opts.font_size) {
            writeln!(
                out,
                r#"<text x="{:.2}" y="{:.1}">{}</text>"#,
                r.x + 3.0,
                y + fh - 4.5,
                escape(&t)
            )?;
        }
        writeln!(out, "</g>")?;
    }
    writeln!(out, "</g>")?;
    writeln!(out, "</svg>")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_are_proportional() {
        let f = vec![("a;b".to_string(), 3), ("a;c".to_string(), 1)];
        let (r, depth) = layout(&f, &FlameOptions::default());
        assert_eq!(depth, 2);
        let w = |n: &str| r.iter().find(|x| x.name == n).unwrap().width;
        assert!((w("b") - 3.0 * w("c")).abs() < 1e-9);
        assert!((w("a") - w("all")).abs() < 1e-9);
    }

    #[test]
    fn text_is_truncated() {
        assert_eq!(
            fit_text("abcdefghij", 100.0, 12.0).as_deref(),
            Some("abcdefghij")
        );
        assert_eq!(
            fit_text("abcdefghijklmnop", 50.0, 12.0).as_deref(),
            Some("abcde..")
        );
        assert_eq!(fit_text("abcdef", 10.0, 12.0), None);
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
    }
}
