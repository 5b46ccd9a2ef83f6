//! A result card to share: the pair and this machine on top, the verdict large, the two rates as
//! bars, and the start of the drafted run's output with drafted tokens marked by colour *and* a
//! tinted band under them (not colour alone), with a key.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{
    cut_to, font, px, text_width, DrawResult, BASELINE, FAST_TEXT, INK, MUTED, SLOW_TEXT, SPECULATIVE, TEXT, TITLE,
};
use super::{CardChart, CardTone};

/// The drafted tokens' band (a light tint of the speculative colour).
const DRAFTED_BAND: RGBColor = RGBColor(214, 234, 246);
/// The card's edge and the excerpt's frame.
const RULE: RGBColor = RGBColor(222, 226, 230);
/// Lines of the excerpt at most.
const EXCERPT_LINES: usize = 6;

pub(super) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &CardChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (w, h) = root.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let (left, right) = (px(s, 20.0), w - px(s, 20.0));
    let width = right - left;
    let text = |t: &str, x: i32, y: i32, style: TextStyle| root.draw(&Text::new(t.to_string(), (x, y), style));
    root.draw(&Rectangle::new([(0, 0), (w - 1, h - 1)], RULE.stroke_width(1)))?;

    // The app's name and this machine; the pair.
    let small = font(s, TEXT).color(&MUTED);
    text("Draftlab", left, px(s, 14.0), top(small.clone()))?;
    let brand = text_width(root, "Draftlab", &small) + px(s, 16.0);
    let machine = cut_to(root, &c.machine, width - brand, &small);
    text(&machine, right, px(s, 14.0), small.clone().pos(Pos::new(HPos::Right, VPos::Top)))?;
    let title_style = font(s, TITLE);
    text(&cut_to(root, &c.title, width, &title_style), left, px(s, 36.0), top(title_style))?;

    // The verdict, large, then the rates and the output; the reason under them.
    let tone = match c.tone {
        CardTone::Faster => FAST_TEXT,
        CardTone::Slower => SLOW_TEXT,
        CardTone::Noise | CardTone::Short => MUTED,
    };
    let big = font(s, 34.0).color(&tone);
    text(&c.headline, left, px(s, 62.0), top(big.clone()))?;
    let after = left + text_width(root, &c.headline, &big) + px(s, 14.0);
    let detail = font(s, 14.0);
    text(&cut_to(root, &c.detail, right - after, &detail), after, px(s, 80.0), top(detail))?;
    if !c.reason.is_empty() {
        text(&cut_to(root, &c.reason, width, &small), left, px(s, 106.0), top(small.clone()))?;
    }

    rates(root, c, s, left, width)?;
    excerpt(root, c, s, (left, right), h)?;

    // The key.
    let y = h - px(s, 22.0);
    let mut x = left;
    for (label, color) in [("drafted and accepted", SPECULATIVE), ("the target's own", INK)] {
        root.draw(&Rectangle::new([(x, y - px(s, 5.0)), (x + px(s, 10.0), y + px(s, 5.0))], color.filled()))?;
        x += px(s, 16.0);
        text(label, x, y, small.clone().pos(Pos::new(HPos::Left, VPos::Center)))?;
        x += text_width(root, label, &small) + px(s, 18.0);
    }
    Ok(())
}

/// Text at `(x, y)` on `root`, placed by its top left corner.
fn top(st: TextStyle<'_>) -> TextStyle<'_> {
    st.pos(Pos::new(HPos::Left, VPos::Top))
}

/// The two rates as bars on one scale, each with its spread when runs were repeated.
fn rates<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &CardChart, s: f64, left: i32, width: i32) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let text = |t: &str, x: i32, y: i32, style: TextStyle| root.draw(&Text::new(t.to_string(), (x, y), style));
    let label_w = px(s, 110.0);
    let most = c.baseline.max.max(c.speculative.max).max(c.baseline.median).max(c.speculative.median);
    let scale = if most.is_finite() && most > 0.0 { f64::from(width - label_w - px(s, 90.0)) / most } else { 0.0 };
    for (i, (label, spread, color)) in
        [("Target alone", &c.baseline, BASELINE), ("With drafter", &c.speculative, SPECULATIVE)].into_iter().enumerate()
    {
        let y = px(s, 130.0) + i as i32 * px(s, 26.0);
        let bar_h = px(s, 18.0);
        text(label, left, y + bar_h / 2, font(s, TEXT).pos(Pos::new(HPos::Left, VPos::Center)))?;
        let x0 = left + label_w;
        let end = |v: f64| x0 + (v.max(0.0) * scale).round() as i32;
        let x1 = end(spread.median).max(x0 + 1);
        root.draw(&Rectangle::new([(x0, y), (x1, y + bar_h)], color.filled()))?;
        if spread.max > spread.min {
            let (a, b, yc) = (end(spread.min), end(spread.max), y + bar_h / 2);
            root.draw(&PathElement::new(vec![(a, yc), (b, yc)], INK.stroke_width(px(s, 1.5).max(1) as u32)))?;
        }
        let value = format!("{:.1} tok/s", spread.median);
        let at = end(spread.max.max(spread.median)) + px(s, 8.0);
        text(&value, at, y + bar_h / 2, font(s, TEXT).pos(Pos::new(HPos::Left, VPos::Center)))?;
    }
    Ok(())
}

/// The excerpt between `left` and `right`, above the key: pieces flowed into lines, drafted ones
/// blue on a tinted band.
fn excerpt<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &CardChart,
    s: f64,
    (left, right): (i32, i32),
    h: i32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let text = |t: &str, x: i32, y: i32, style: TextStyle| root.draw(&Text::new(t.to_string(), (x, y), style));
    let (box_top, box_bottom) = (px(s, 190.0), h - px(s, 34.0));
    root.draw(&Rectangle::new([(left, box_top), (right, box_bottom)], RULE.stroke_width(1)))?;
    let pad = px(s, 10.0);
    let (x_start, x_end) = (left + pad, right - pad);
    let line_h = px(s, 19.0);
    let piece_style = |drafted: bool| font(s, 13.0).color(if drafted { &SPECULATIVE } else { &INK });
    let (mut x, mut line) = (x_start, 0usize);
    'pieces: for piece in &c.excerpt {
        for (n, part) in piece.text.split('\n').enumerate() {
            if n > 0 {
                line += 1;
                x = x_start;
            }
            let part = part.replace('\t', "    ");
            if part.is_empty() {
                continue;
            }
            let style = piece_style(piece.drafted);
            let mut wide = text_width(root, &part, &style);
            if x + wide > x_end && x > x_start {
                line += 1;
                x = x_start;
            }
            if line >= EXCERPT_LINES {
                break 'pieces;
            }
            let shown = if wide > x_end - x { cut_to(root, &part, x_end - x, &style) } else { part.clone() };
            wide = wide.min(x_end - x);
            let y = box_top + pad + line as i32 * line_h;
            if piece.drafted {
                root.draw(&Rectangle::new(
                    [(x, y + line_h - px(s, 5.0)), (x + wide, y + line_h - px(s, 2.0))],
                    DRAFTED_BAND.filled(),
                ))?;
            }
            text(&shown, x, y, top(style))?;
            x += wide;
        }
    }
    Ok(())
}
