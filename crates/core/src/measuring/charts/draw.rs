//! Drawing each chart on any plotters backend. Every length is in CSS pixels times `s` (the PNG
//! scale), so the SVG and the PNG have the same layout.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{
    cut_to, font, px, text_width, upx, DrawResult, BASELINE, FAST_TEXT, INK, MUTED, SLOW_TEXT, SPECULATIVE, TEXT, TITLE,
};
use super::{BarsChart, Chart, DraftLengthChart, HeatCell, HeatmapChart, LengthsChart, PositionsChart, TimelineChart};

/// The ends of the speedup scale: vermillion below 1×, blue above.
const SLOW: RGBColor = RGBColor(213, 94, 0);
const NEUTRAL: RGBColor = RGBColor(247, 247, 247);
const FAST: RGBColor = RGBColor(0, 114, 178);
const NOT_RUN: RGBColor = RGBColor(200, 200, 200);
/// Colours of successive series (lines of a timeline, pairs of a draft-length chart).
const PALETTE: [RGBColor; 7] = [
    RGBColor(120, 130, 140),
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(213, 94, 0),
    RGBColor(86, 180, 233),
];
/// Series lines are never thinner than this.
const LINE: f64 = 2.0;

fn stroke(color: RGBColor, s: f64, width: f64) -> ShapeStyle {
    ShapeStyle { color: color.to_rgba(), filled: false, stroke_width: upx(s, width).max(1) }
}

/// A round upper bound for an axis (1, 2 or 5 × a power of ten, at least `v`).
fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * p).find(|&x| x >= v).unwrap_or(10.0 * p)
}

fn finite_or(v: f64, fallback: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        fallback
    }
}

type Ctx<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart on `area` (below its head) with label areas of (x, y) CSS pixels and the given axis ranges.
fn chart_on<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    s: f64,
    (x_area, y_area): (f64, f64),
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> std::result::Result<Ctx<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    ChartBuilder::on(area)
        .margin(px(s, 12.0))
        .margin_top(px(s, 4.0))
        .margin_right(px(s, 20.0))
        .x_label_area_size(px(s, x_area))
        .y_label_area_size(px(s, y_area))
        .build_cartesian_2d(x, y)
}

/// How a series shows in the key.
#[derive(Clone, Copy)]
enum Key {
    Line(RGBColor),
    Dashed(RGBColor),
    Box(RGBColor),
}

/// The title and the series key (rows of entries, left to right) above the plot, never over the
/// data; returns the area left for the plot.
fn head<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    keys: &[(String, Key)],
    s: f64,
) -> std::result::Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = root.dim_in_pixel();
    let w = w as i32;
    root.draw(&Text::new(
        title.to_string(),
        (w / 2, px(s, 10.0)),
        font(s, TITLE).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;
    let (row_h, key_w, gap) = (px(s, 22.0), px(s, 18.0), px(s, 16.0));
    // Entries flow in rows, each row centred.
    let mut rows: Vec<Vec<(&str, Key, i32)>> = vec![Vec::new()];
    let mut used = 0;
    for (label, key) in keys {
        let text_w =
            root.estimate_text_size(label, &font(s, TEXT)).map_or(label.len() as i32 * px(s, 7.0), |(x, _)| x as i32);
        let item = key_w + px(s, 6.0) + text_w;
        let row = rows.last_mut().expect("a row");
        if !row.is_empty() && used + gap + item > w - px(s, 24.0) {
            rows.push(Vec::new());
            used = 0;
        }
        let row = rows.last_mut().expect("a row");
        used += if row.is_empty() { item } else { gap + item };
        row.push((label.as_str(), *key, item));
    }
    let top = px(s, 36.0);
    let mut y = top;
    for row in rows.iter().filter(|r| !r.is_empty()) {
        let total: i32 = row.iter().map(|r| r.2).sum::<i32>() + gap * (row.len() as i32 - 1);
        let mut x = (w - total) / 2;
        let yc = y + row_h / 2;
        for &(label, key, item) in row {
            let (x0, x1) = (x, x + key_w);
            match key {
                Key::Line(c) => root.draw(&PathElement::new(vec![(x0, yc), (x1, yc)], stroke(c, s, LINE + 1.0)))?,
                Key::Dashed(c) => root.draw(&DashedPathElement::new(
                    vec![(x0, yc), (x1, yc)],
                    upx(s, 5.0),
                    upx(s, 3.0),
                    stroke(c, s, LINE),
                ))?,
                Key::Box(c) => root.draw(&Rectangle::new(
                    [(x0 + px(s, 3.0), yc - px(s, 6.0)), (x1 - px(s, 3.0), yc + px(s, 6.0))],
                    c.filled(),
                ))?,
            }
            root.draw(&Text::new(
                label.to_string(),
                (x1 + px(s, 6.0), yc),
                font(s, TEXT).pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            x += item + gap;
        }
        y += row_h;
    }
    let body_top = if keys.is_empty() { top } else { y + px(s, 4.0) };
    let (_, body) = root.split_vertically(body_top);
    Ok(body)
}

pub(super) fn draw<DB: DrawingBackend>(backend: DB, chart: &Chart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let root = backend.into_drawing_area();
    root.fill(&WHITE)?;
    match chart {
        Chart::Bars(c) => bars(&root, c, s)?,
        Chart::Timeline(c) => timeline(&root, c, s)?,
        Chart::Positions(c) => positions(&root, c, s)?,
        Chart::Lengths(c) => lengths(&root, c, s)?,
        Chart::Heatmap(c) => heatmap(&root, c, s)?,
        Chart::DraftLength(c) => draft_length(&root, c, s)?,
        Chart::Card(c) => super::card::draw(&root, c, s)?,
    }
    root.present()?;
    Ok(())
}

/// A message in the middle of an empty chart.
fn empty<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, message: &str, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (w, h) = root.dim_in_pixel();
    head(root, title, &[], s)?;
    root.draw(&Text::new(
        message.to_string(),
        (w as i32 / 2, h as i32 / 2),
        font(s, TITLE).color(&MUTED).pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    Ok(())
}

fn bars<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &BarsChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if c.groups.is_empty() {
        return empty(root, &c.title, "no runs yet", s);
    }
    let n = c.groups.len();
    let top = c
        .groups
        .iter()
        .flat_map(|g| [g.baseline.max, g.speculative.max, g.baseline.median, g.speculative.median])
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let keys = [
        ("baseline (target alone)".to_string(), Key::Box(BASELINE)),
        ("speculative".to_string(), Key::Box(SPECULATIVE)),
    ];
    let body = head(root, &c.title, &keys, s)?;
    let mut ch = chart_on(&body, s, (44.0, 62.0), 0f64..n as f64, 0f64..nice_max(top * 1.18))?;
    ch.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("tokens/s")
        .label_style(font(s, 12.0))
        .axis_desc_style(font(s, 12.0))
        .bold_line_style(stroke(RGBColor(225, 225, 225), s, 1.0))
        .light_line_style(TRANSPARENT)
        .draw()?;
    let bar = |i: usize, left: bool, v: f64, color: RGBColor| {
        let x0 = i as f64 + if left { 0.14 } else { 0.52 };
        Rectangle::new([(x0, 0.0), (x0 + 0.34, finite_or(v, 0.0))], color.filled())
    };
    ch.draw_series(c.groups.iter().enumerate().map(|(i, g)| bar(i, true, g.baseline.median, BASELINE)))?;
    ch.draw_series(c.groups.iter().enumerate().map(|(i, g)| bar(i, false, g.speculative.median, SPECULATIVE)))?;
    // Min–max whiskers.
    for (i, g) in c.groups.iter().enumerate() {
        for (left, sp) in [(true, &g.baseline), (false, &g.speculative)] {
            if !(sp.min.is_finite() && sp.max.is_finite()) || sp.max <= sp.min {
                continue;
            }
            let x = i as f64 + if left { 0.31 } else { 0.69 };
            let cap = 0.05;
            let style = stroke(INK, s, LINE);
            ch.draw_series([
                PathElement::new(vec![(x, sp.min), (x, sp.max)], style),
                PathElement::new(vec![(x - cap, sp.min), (x + cap, sp.min)], style),
                PathElement::new(vec![(x - cap, sp.max), (x + cap, sp.max)], style),
            ])?;
        }
    }
    // The speedup over each group, and the group's label under it.
    for (i, g) in c.groups.iter().enumerate() {
        let (x, _) = ch.backend_coord(&(i as f64 + 0.5, 0.0));
        let high = finite_or(g.baseline.max.max(g.speculative.max), 0.0).max(g.speculative.median);
        let (_, y) = ch.backend_coord(&(i as f64 + 0.5, finite_or(high, 0.0)));
        if g.baseline.median > 0.0 && g.speculative.median.is_finite() {
            let speedup = g.speculative.median / g.baseline.median;
            let color = if speedup >= 1.0 { FAST_TEXT } else { SLOW_TEXT };
            root.draw(&Text::new(
                format!("{speedup:.2}×"),
                (x, y - px(s, 4.0)),
                font(s, 14.0).color(&color).pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))?;
        }
        let (_, y0) = ch.backend_coord(&(0.0, 0.0));
        root.draw(&Text::new(
            g.label.clone(),
            (x, y0 + px(s, 8.0)),
            font(s, TEXT).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    Ok(())
}

fn timeline<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &TimelineChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let points = || c.series.iter().flat_map(|x| x.points.iter()).filter(|(x, y)| x.is_finite() && y.is_finite());
    if points().next().is_none() {
        return empty(root, &c.title, "no tokens yet", s);
    }
    let xmax = points().map(|p| p.0).fold(0.0, f64::max);
    let ymax = points().map(|p| p.1).fold(0.0, f64::max);
    let keys: Vec<(String, Key)> =
        c.series.iter().enumerate().map(|(i, x)| (x.label.clone(), Key::Line(PALETTE[i % PALETTE.len()]))).collect();
    let body = head(root, &c.title, &keys, s)?;
    let mut ch = chart_on(&body, s, (44.0, 62.0), 0f64..nice_max(xmax), 0f64..nice_max(ymax * 1.1))?;
    ch.configure_mesh()
        .x_desc("seconds")
        .y_desc("tokens/s")
        .label_style(font(s, 12.0))
        .axis_desc_style(font(s, 12.0))
        .bold_line_style(stroke(RGBColor(225, 225, 225), s, 1.0))
        .light_line_style(TRANSPARENT)
        .draw()?;
    for (i, series) in c.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, f64)> =
            series.points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
        ch.draw_series(LineSeries::new(pts, stroke(color, s, LINE)))?;
    }
    Ok(())
}

/// Bars over categories: a value, a label under it and a note over it for each, the axes' words
/// and the scale's top. What the positions and lengths charts share.
struct CategoryBars<'a> {
    title: &'a str,
    labels: &'a [String],
    values: &'a [f64],
    notes: &'a [String],
    x_desc: &'a str,
    y_desc: &'a str,
    y_top: f64,
}

/// Draws `bars` on `root` at scale `s`.
fn category_bars<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, bars: CategoryBars<'_>, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let CategoryBars { title, labels, values, notes, x_desc, y_desc, y_top } = bars;
    let n = values.len().max(1);
    let body = head(root, title, &[], s)?;
    let mut ch = chart_on(&body, s, (48.0, 62.0), 0f64..n as f64, 0f64..y_top)?;
    ch.configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(y_desc)
        .label_style(font(s, 12.0))
        .axis_desc_style(font(s, 12.0))
        .bold_line_style(stroke(RGBColor(225, 225, 225), s, 1.0))
        .light_line_style(TRANSPARENT)
        .draw()?;
    ch.draw_series(values.iter().enumerate().map(|(i, &v)| {
        Rectangle::new([(i as f64 + 0.15, 0.0), (i as f64 + 0.85, finite_or(v, 0.0))], SPECULATIVE.filled())
    }))?;
    let (_, y0) = ch.backend_coord(&(0.0, 0.0));
    for (i, label) in labels.iter().enumerate() {
        let (x, y) = ch.backend_coord(&(i as f64 + 0.5, finite_or(values[i], 0.0)));
        root.draw(&Text::new(
            label.clone(),
            (x, y0 + px(s, 6.0)),
            font(s, TEXT).pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        if let Some(note) = notes.get(i) {
            root.draw(&Text::new(
                note.clone(),
                (x, y - px(s, 3.0)),
                font(s, TEXT).color(&MUTED).pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))?;
        }
    }
    let (w, h) = root.dim_in_pixel();
    root.draw(&Text::new(
        x_desc.to_string(),
        (w as i32 / 2, h as i32 - px(s, 6.0)),
        font(s, TEXT).pos(Pos::new(HPos::Center, VPos::Bottom)),
    ))?;
    Ok(())
}

fn positions<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &PositionsChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let n = c.drafted.iter().rposition(|&d| d > 0).map_or(0, |i| i + 1);
    if n == 0 {
        return empty(root, &c.title, "nothing drafted", s);
    }
    let rates: Vec<f64> = (0..n)
        .map(|i| {
            let d = c.drafted[i];
            if d == 0 {
                0.0
            } else {
                100.0 * c.accepted.get(i).copied().unwrap_or(0) as f64 / d as f64
            }
        })
        .collect();
    let labels: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    let notes: Vec<String> = rates.iter().zip(&c.drafted).map(|(r, d)| format!("{r:.0}% of {d}")).collect();
    let bars = CategoryBars {
        title: &c.title,
        labels: &labels,
        values: &rates,
        notes: &notes,
        x_desc: "draft position",
        y_desc: "accepted (%)",
        y_top: 110.0,
    };
    category_bars(root, bars, s)
}

fn lengths<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LengthsChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let n = c.histogram.iter().rposition(|&d| d > 0).map_or(0, |i| i + 1);
    if n == 0 {
        return empty(root, &c.title, "no drafting rounds", s);
    }
    let values: Vec<f64> = c.histogram[..n].iter().map(|&v| v as f64).collect();
    let labels: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let notes: Vec<String> = c.histogram[..n].iter().map(u64::to_string).collect();
    let top = nice_max(values.iter().copied().fold(0.0, f64::max) * 1.12);
    let bars = CategoryBars {
        title: &c.title,
        labels: &labels,
        values: &values,
        notes: &notes,
        x_desc: "draft tokens accepted in a round",
        y_desc: "rounds",
        y_top: top,
    };
    category_bars(root, bars, s)
}

/// `text` in at most three lines of at most `width` pixels: its " · "-separated parts (a cell's
/// detail) packed into lines, and a line still too wide cut with "…".
fn fit_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    width: i32,
    style: &TextStyle,
) -> Vec<String> {
    const MOST: usize = 3;
    let wide = |t: &str| text_width(area, t, style);
    let mut lines: Vec<String> = Vec::new();
    for part in text.split(" · ") {
        match lines.last_mut() {
            Some(line) if wide(&format!("{line} · {part}")) <= width => *line = format!("{line} · {part}"),
            _ => lines.push(part.to_string()),
        }
    }
    if lines.len() > MOST {
        let rest = lines.split_off(MOST - 1).join(" · ");
        lines.push(rest);
    }
    lines.iter().map(|l| cut_to(area, l, width, style)).collect()
}

/// A name in at most two lines of at most `width` pixels, broken after a `-`, `_`, `.` or space
/// where one fits (else anywhere), the rest cut with "…".
fn wrap<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, text: &str, width: i32, style: &TextStyle) -> Vec<String> {
    let wide = |t: &str| text_width(area, t, style);
    if wide(text) <= width {
        return vec![text.to_string()];
    }
    let chars: Vec<char> = text.chars().collect();
    let fits = |n: usize| wide(&chars[..n].iter().collect::<String>()) <= width;
    let most = (1..chars.len()).rev().find(|&n| fits(n)).unwrap_or(1);
    let at = (1..=most).rev().find(|&n| matches!(chars[n - 1], '-' | '_' | '.' | ' ')).unwrap_or(most);
    let first: String = chars[..at].iter().collect();
    let rest: String = chars[at..].iter().collect();
    vec![first.trim_end().to_string(), cut_to(area, rest.trim_start(), width, style)]
}

/// Relative luminance (WCAG) of a colour, 0 (black) to 1 (white).
fn luminance(c: RGBColor) -> f64 {
    let lin = |v: u8| {
        let v = f64::from(v) / 255.0;
        if v <= 0.03928 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(c.0) + 0.7152 * lin(c.1) + 0.0722 * lin(c.2)
}

/// The colour of a speedup: vermillion below 1×, near-white at 1×, blue above, saturating at ½×
/// and 2×.
pub(super) fn speedup_color(speedup: f64) -> RGBColor {
    let t = if speedup > 0.0 { speedup.log2().clamp(-1.0, 1.0) } else { -1.0 };
    let (from, to, t) = if t < 0.0 { (NEUTRAL, SLOW, -t) } else { (NEUTRAL, FAST, t) };
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    RGBColor(mix(from.0, to.0), mix(from.1, to.1), mix(from.2, to.2))
}

/// A heat-map cell's fill, its value and the line under it.
fn cell_look(cell: &HeatCell) -> (RGBColor, String, String) {
    match cell {
        HeatCell::Speedup { speedup, setting, cross } => {
            let setting = if *cross { format!("{setting} · cross-vocab") } else { setting.clone() };
            (
                speedup_color(speedup.median),
                format!("{:.2}×", speedup.median),
                if speedup.max > speedup.min {
                    format!("{:.2}–{:.2} · {setting}", speedup.min, speedup.max)
                } else {
                    setting
                },
            )
        }
        HeatCell::Incompatible => (NOT_RUN, "incompatible".to_string(), "vocabularies differ".to_string()),
        HeatCell::TooBig => (NOT_RUN, "too big".to_string(), "does not fit".to_string()),
        HeatCell::Failed => (NOT_RUN, "failed".to_string(), String::new()),
        HeatCell::Pending => (WHITE, "…".to_string(), String::new()),
    }
}

/// The heat map's row labels (left of each row) and column labels (wrapped under each column);
/// `at` places a chart coordinate on the drawing.
fn axis_labels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &HeatmapChart,
    at: &dyn Fn(f64, f64) -> (i32, i32),
    s: f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let rows = c.rows.len();
    for (r, label) in c.rows.iter().enumerate() {
        let (x, y) = at(0.0, (rows - r) as f64 - 0.5);
        root.draw(&Text::new(
            label.clone(),
            (x - px(s, 6.0), y),
            font(s, TEXT).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    for (k, label) in c.cols.iter().enumerate() {
        let (x, y) = at(k as f64 + 0.5, 0.0);
        let (left, _) = at(k as f64, 0.0);
        let (right, _) = at(k as f64 + 1.0, 0.0);
        for (i, line) in wrap(root, label, right - left - px(s, 6.0), &font(s, TEXT)).into_iter().enumerate() {
            root.draw(&Text::new(
                line,
                (x, y + px(s, 6.0) + i as i32 * px(s, TEXT + 3.0)),
                font(s, TEXT).pos(Pos::new(HPos::Center, VPos::Top)),
            ))?;
        }
    }
    Ok(())
}

/// The heat map's colour scale in `legend`.
fn speedup_scale<DB: DrawingBackend>(legend: &DrawingArea<DB, Shift>, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    // The colour scale: ½× (vermillion) to 2× (blue), 1× in the middle.
    let (_, lh) = legend.dim_in_pixel();
    let (top, bottom) = (px(s, 48.0), lh as i32 - px(s, 48.0));
    let x0 = px(s, 16.0);
    let steps = 64;
    for i in 0..steps {
        let t = 1.0 - 2.0 * (i as f64 + 0.5) / steps as f64; // +1 at the top
        let y = top + (bottom - top) * i / steps;
        let y_next = top + (bottom - top) * (i + 1) / steps;
        legend.draw(&Rectangle::new([(x0, y), (x0 + px(s, 16.0), y_next)], speedup_color(2f64.powf(t)).filled()))?;
    }
    legend.draw(&Rectangle::new([(x0, top), (x0 + px(s, 16.0), bottom)], stroke(MUTED, s, 1.0)))?;
    for (label, y) in [("≥2×", top), ("1×", (top + bottom) / 2), ("≤½×", bottom)] {
        legend.draw(&Text::new(
            label.to_string(),
            (x0 + px(s, 22.0), y),
            font(s, TEXT).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    legend.draw(&Text::new(
        "speedup".to_string(),
        (x0, top - px(s, 10.0)),
        font(s, TEXT).pos(Pos::new(HPos::Left, VPos::Bottom)),
    ))?;
    Ok(())
}

fn heatmap<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &HeatmapChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if c.rows.is_empty() || c.cols.is_empty() {
        return empty(root, &c.title, "no cells", s);
    }
    let body = head(root, &c.title, &[], s)?;
    let (w, _) = body.dim_in_pixel();
    let (plot, legend) = body.split_horizontally(w.saturating_sub(upx(s, 84.0)));
    let (rows, cols) = (c.rows.len(), c.cols.len());
    let row_label_width = c.rows.iter().map(|r| r.chars().count()).max().unwrap_or(0).clamp(6, 28) as f64 * 7.4 + 12.0;
    let mut ch = ChartBuilder::on(&plot)
        .margin(px(s, 12.0))
        .margin_top(px(s, 4.0))
        .x_label_area_size(px(s, 36.0))
        .y_label_area_size(px(s, row_label_width))
        .build_cartesian_2d(0f64..cols as f64, 0f64..rows as f64)?;
    let cell_font = (9.0 + 14.0 / (rows.max(cols) as f64).sqrt()).clamp(TEXT + 1.0, 16.0);
    for (r, row) in c.cells.iter().enumerate().take(rows) {
        let y1 = (rows - r) as f64;
        for (k, cell) in row.iter().enumerate().take(cols) {
            let x0 = k as f64;
            let (fill, text, detail) = cell_look(cell);
            ch.draw_series([
                Rectangle::new([(x0, y1 - 1.0), (x0 + 1.0, y1)], fill.filled()),
                Rectangle::new([(x0, y1 - 1.0), (x0 + 1.0, y1)], stroke(WHITE, s, 2.0)),
            ])?;
            if matches!(cell, HeatCell::Speedup { cross: true, .. }) {
                // The marker of a draft across vocabularies: a dark corner, top right.
                let (right, top) = ch.backend_coord(&(x0 + 1.0, y1));
                let d = px(s, 12.0);
                root.draw(&Polygon::new(vec![(right - d, top), (right, top), (right, top + d)], INK.filled()))?;
            }
            let (cx, cy) = ch.backend_coord(&(x0 + 0.5, y1 - 0.5));
            // White type on the dark ends of the scale, dark type elsewhere.
            let dark = luminance(fill) < 0.3;
            let ink = if dark {
                WHITE
            } else if matches!(cell, HeatCell::Speedup { .. }) {
                INK
            } else {
                MUTED
            };
            let soft = if dark { RGBColor(235, 240, 245) } else { MUTED };
            let (left, _) = ch.backend_coord(&(x0, 0.0));
            let (right, _) = ch.backend_coord(&(x0 + 1.0, 0.0));
            let room = right - left - px(s, 8.0);
            // The value in the cell's type, or smaller (not under the smallest) where it is too wide.
            let size = [cell_font, TEXT + 1.0]
                .into_iter()
                .find(|&f| text_width(root, &text, &font(s, f)) <= room)
                .unwrap_or(TEXT + 1.0);
            root.draw(&Text::new(
                cut_to(root, &text, room, &font(s, size)),
                (cx, cy - px(s, cell_font * 0.35)),
                font(s, size).color(&ink).pos(Pos::new(HPos::Center, VPos::Center)),
            ))?;
            if !detail.is_empty() {
                let lines = fit_lines(root, &detail, room, &font(s, TEXT));
                for (i, line) in lines.into_iter().enumerate() {
                    root.draw(&Text::new(
                        line,
                        (cx, cy + px(s, cell_font * 0.75) + i as i32 * px(s, TEXT + 3.0)),
                        font(s, TEXT).color(&soft).pos(Pos::new(HPos::Center, VPos::Center)),
                    ))?;
                }
            }
        }
    }
    axis_labels(root, c, &|x, y| ch.backend_coord(&(x, y)), s)?;
    speedup_scale(&legend, s)
}

fn draft_length<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &DraftLengthChart, s: f64) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let all = || {
        c.series
            .iter()
            .flat_map(|x| x.measured.iter().chain(x.predicted.iter()))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    };
    if all().next().is_none() {
        return empty(root, &c.title, "nothing measured yet", s);
    }
    let xmax = all().map(|p| p.0).fold(1.0, f64::max);
    let ymax = all().map(|p| p.1).fold(1.0, f64::max);
    let mut keys = Vec::new();
    for (i, series) in c.series.iter().enumerate() {
        let color = PALETTE[(i + 1) % PALETTE.len()];
        keys.push((format!("{} measured", series.label), Key::Line(color)));
        if series.predicted.iter().any(|p| p.1.is_finite()) {
            keys.push((format!("{} predicted", series.label), Key::Dashed(color)));
        }
    }
    let body = head(root, &c.title, &keys, s)?;
    let mut ch = chart_on(&body, s, (44.0, 62.0), 0f64..xmax + 1.0, 0f64..nice_max(ymax * 1.15))?;
    ch.configure_mesh()
        .x_desc("draft length (tokens)")
        .x_labels(((xmax + 1.0) as usize + 1).min(12))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc("speedup (×)")
        .label_style(font(s, 12.0))
        .axis_desc_style(font(s, 12.0))
        .bold_line_style(stroke(RGBColor(225, 225, 225), s, 1.0))
        .light_line_style(TRANSPARENT)
        .draw()?;
    // 1× is where speculation stops paying.
    ch.draw_series(DashedLineSeries::new(
        vec![(0.0, 1.0), (xmax + 1.0, 1.0)],
        upx(s, 4.0),
        upx(s, 4.0),
        stroke(MUTED, s, LINE),
    ))?;
    for (i, series) in c.series.iter().enumerate() {
        let color = PALETTE[(i + 1) % PALETTE.len()];
        let measured: Vec<(f64, f64)> = series.measured.iter().copied().filter(|p| p.1.is_finite()).collect();
        let predicted: Vec<(f64, f64)> = series.predicted.iter().copied().filter(|p| p.1.is_finite()).collect();
        ch.draw_series(LineSeries::new(measured.clone(), stroke(color, s, LINE)))?;
        ch.draw_series(measured.iter().map(|&p| Circle::new(p, upx(s, 4.0), color.filled())))?;
        if !predicted.is_empty() {
            ch.draw_series(predicted.iter().map(|&p| Circle::new(p, upx(s, 4.5), stroke(color, s, LINE))))?;
            ch.draw_series(DashedLineSeries::new(predicted, upx(s, 6.0), upx(s, 4.0), stroke(color, s, LINE)))?;
        }
    }
    Ok(())
}
