//! What every chart and the result card draw with: the embedded font, type sizes, the text
//! colours, lengths in CSS pixels times the scale, and text measured and cut to a width.

use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{Error, Result};

pub(super) type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

const FONT: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

// Colours from the Okabe–Ito set (told apart with the common colour-vision deficiencies); text
// colours have at least 4.5:1 contrast on white.
pub(super) const INK: RGBColor = RGBColor(33, 37, 41);
pub(super) const MUTED: RGBColor = RGBColor(95, 102, 110);
pub(super) const BASELINE: RGBColor = RGBColor(120, 130, 140);
pub(super) const SPECULATIVE: RGBColor = RGBColor(0, 114, 178);

/// Speedups written as text (darker, for contrast).
pub(super) const SLOW_TEXT: RGBColor = RGBColor(168, 62, 0);
pub(super) const FAST_TEXT: RGBColor = RGBColor(0, 92, 148);

/// The smallest type on a chart (CSS pixels at 1×), and the title's.
pub(super) const TEXT: f64 = 12.0;
pub(super) const TITLE: f64 = 15.0;

pub(super) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TTF (a test draws text with it); nothing to do if it were not.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

pub(super) fn check_size(width: u32, height: u32) -> Result<()> {
    if !(200..=4000).contains(&width) || !(150..=4000).contains(&height) {
        return Err(Error::InvalidSettings(format!(
            "a chart must be 200–4000 × 150–4000 pixels, not {width} × {height}"
        )));
    }
    Ok(())
}

pub(super) fn px(s: f64, v: f64) -> i32 {
    (v * s).round() as i32
}

pub(super) fn upx(s: f64, v: f64) -> u32 {
    (v * s).round().max(0.0) as u32
}

/// plotters' SVG writes a font's size divided by this (and draws PNG glyphs as small): sizes here
/// are CSS pixels, so they are multiplied by it.
const PLOTTERS_EM: f64 = 1.24;

/// Type of `size` CSS pixels (times the scale `s`).
pub(super) fn font(s: f64, size: f64) -> TextStyle<'static> {
    FontDesc::new(FontFamily::SansSerif, size * s * PLOTTERS_EM, FontStyle::Normal).color(&INK)
}

/// How wide `text` is drawn in `style` (0 when the font cannot tell).
pub(super) fn text_width<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, text: &str, style: &TextStyle) -> i32 {
    area.estimate_text_size(text, style).map_or(0, |(w, _)| w as i32)
}

/// `text` cut with "…" to at most `width` pixels (one character and "…" at the least).
pub(super) fn cut_to<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    width: i32,
    style: &TextStyle,
) -> String {
    let wide = |t: &str| text_width(area, t, style);
    if wide(text) <= width {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let with_dots = |n: usize| format!("{}…", chars[..n].iter().collect::<String>().trim_end());
    let n = (1..chars.len()).rev().find(|&n| wide(&with_dots(n)) <= width).unwrap_or(1);
    with_dots(n)
}
