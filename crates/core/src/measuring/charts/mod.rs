//! Charts drawn with plotters. The same chart renders as SVG (the app shows it, streamed during runs
//! and sweeps) and as PNG (exported, at 2× for Retina screens). The font is embedded (DejaVu Sans,
//! through ab_glyph), so every machine draws the same pixels, and the same data gives the same bytes.
//!
//! The data of each chart is a plain serialisable struct ([`Chart`]); `data` builds them from run
//! reports, bench results and sweeps.

mod card;
pub mod data;
mod draw;
mod style;
pub mod sweep;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::measuring::bench::Spread;

/// The size charts are drawn at unless asked otherwise (CSS pixels; PNGs multiply it by their
/// scale): about the size the app shows them at, so 12-pixel type is 12 pixels on screen.
pub const WIDTH: u32 = 560;
pub const HEIGHT: u32 = 340;
/// The size of the chart files the CLI writes (a file opened on its own, not a card in the app:
/// room for a sweep's long model names in full).
pub const FILE_WIDTH: u32 = 960;
pub const FILE_HEIGHT: u32 = 540;
/// PNG exports are drawn at this multiple of the CSS size (sharp on Retina screens).
pub const PNG_SCALE: u32 = 2;

/// One chart and its data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Chart {
    /// Tokens/s of baseline and speculative runs, median bars with min–max whiskers, and the speedup.
    Bars(BarsChart),
    /// Tokens/s over the run, one line per run.
    Timeline(TimelineChart),
    /// Acceptance rate by draft position.
    Positions(PositionsChart),
    /// How many draft tokens each round accepted.
    Lengths(LengthsChart),
    /// Sweep: speedup of each target × draft cell, coloured around 1.0×.
    Heatmap(HeatmapChart),
    /// Sweep: speedup against draft length per pair, measured next to predicted.
    DraftLength(DraftLengthChart),
    /// A result to share: the pair, this machine, the speedup, the bars and the start of the
    /// output coloured by where each token came from.
    Card(CardChart),
}

impl Chart {
    /// Baseline and speculative tokens/s of benches (or of a baseline and a speculative run), by
    /// group.
    pub fn bars(title: &str, groups: Vec<BarGroup>) -> Chart {
        Chart::Bars(BarsChart { title: title.to_string(), groups })
    }

    /// The names `draftlab chart --kind` takes.
    pub const KINDS: [&'static str; 6] = ["bars", "timeline", "positions", "lengths", "heatmap", "draft-length"];
    // (A card is made by the app from a run it shows, not by `draftlab chart`.)

    pub fn kind(&self) -> &'static str {
        match self {
            Chart::Bars(_) => "bars",
            Chart::Timeline(_) => "timeline",
            Chart::Positions(_) => "positions",
            Chart::Lengths(_) => "lengths",
            Chart::Heatmap(_) => "heatmap",
            Chart::DraftLength(_) => "draft-length",
            Chart::Card(_) => "card",
        }
    }

    /// The size it is drawn at in the app and exported at (CSS pixels; a PNG multiplies it by
    /// [`PNG_SCALE`]): a card has its own.
    pub fn size(&self) -> (u32, u32) {
        match self {
            Chart::Card(_) => (CARD_WIDTH, CARD_HEIGHT),
            _ => (WIDTH, HEIGHT),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BarGroup {
    pub label: String,
    /// Tokens/s of the baseline runs.
    pub baseline: Spread,
    /// Tokens/s of the speculative runs.
    pub speculative: Spread,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BarsChart {
    pub title: String,
    pub groups: Vec<BarGroup>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Series {
    pub label: String,
    /// (x, y) points in order of x.
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct TimelineChart {
    pub title: String,
    /// x: seconds since generation started; y: tokens/s.
    pub series: Vec<Series>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PositionsChart {
    pub title: String,
    /// `drafted[i]`: rounds that drafted a token at position i (0-based).
    pub drafted: Vec<u64>,
    /// `accepted[i]`: rounds whose token at position i was accepted.
    pub accepted: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct LengthsChart {
    pub title: String,
    /// `histogram[k]`: rounds that accepted exactly k draft tokens.
    pub histogram: Vec<u64>,
}

/// One cell of a sweep heat map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum HeatCell {
    /// Measured: speculative ÷ baseline tokens/s, with the setting that gave it; `cross` when the
    /// draft drafted across vocabularies (the cell carries a marker).
    Speedup {
        speedup: Spread,
        setting: String,
        #[serde(default)]
        cross: bool,
    },
    /// The pair cannot work (a draft without a token list); not run.
    Incompatible,
    /// Not run: the pair does not fit in memory.
    TooBig,
    /// The runs failed.
    Failed,
    /// Not measured yet.
    Pending,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct HeatmapChart {
    pub title: String,
    /// Targets, top to bottom.
    pub rows: Vec<String>,
    /// Drafts (and draftless strategies), left to right.
    pub cols: Vec<String>,
    /// `cells[row][col]`.
    pub cells: Vec<Vec<HeatCell>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DraftLengthSeries {
    pub label: String,
    /// (draft length, measured speedup).
    pub measured: Vec<(f64, f64)>,
    /// (draft length, predicted speedup).
    pub predicted: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DraftLengthChart {
    pub title: String,
    pub series: Vec<DraftLengthSeries>,
}

/// How a card's verdict reads: its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum CardTone {
    Faster,
    Slower,
    Noise,
    Short,
}

/// One piece of a card's excerpt: a token's text, and whether it was drafted and accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CardPiece {
    pub text: String,
    pub drafted: bool,
}

/// A result card (PNG to share): everything it shows is given as text by the app, which words
/// verdicts the way its views do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CardChart {
    /// The pair: the target, and what drafted for it.
    pub title: String,
    /// This machine: chip, memory, backend.
    pub machine: String,
    /// The verdict, large: "1.42× faster".
    pub headline: String,
    pub tone: CardTone,
    /// The rates and the output: "16.1 → 22.9 tok/s · identical output".
    pub detail: String,
    /// Why it is within noise or too short to judge (may be empty); the spread of repeated runs.
    pub reason: String,
    /// Tokens/s of the target alone and with its drafter.
    pub baseline: Spread,
    pub speculative: Spread,
    /// The start of the drafted run's output.
    pub excerpt: Vec<CardPiece>,
}

/// A card's size (CSS pixels; its PNG is drawn at [`PNG_SCALE`]).
pub const CARD_WIDTH: u32 = 640;
pub const CARD_HEIGHT: u32 = 360;

/// The chart as an SVG document of `width` × `height` pixels.
pub fn svg(chart: &Chart, width: u32, height: u32) -> Result<String> {
    style::check_size(width, height)?;
    style::register_font();
    let mut out = String::new();
    {
        let root = plotters::prelude::SVGBackend::with_string(&mut out, (width, height));
        draw::draw(root, chart, 1.0).map_err(|e| Error::Chart(e.to_string()))?;
    }
    Ok(out)
}

/// The chart as a PNG image of (`width` × `scale`) × (`height` × `scale`) pixels: the SVG's layout,
/// drawn `scale` times finer.
pub fn png(chart: &Chart, width: u32, height: u32, scale: u32) -> Result<Vec<u8>> {
    style::check_size(width, height)?;
    if !(1..=4).contains(&scale) {
        return Err(Error::InvalidSettings(format!("the PNG scale must be 1 to 4, not {scale}")));
    }
    style::register_font();
    let (w, h) = (width * scale, height * scale);
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = plotters::prelude::BitMapBackend::with_buffer(&mut rgb, (w, h));
        draw::draw(root, chart, f64::from(scale)).map_err(|e| Error::Chart(e.to_string()))?;
    }
    encode_png(&rgb, w, h)
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| Error::Chart(e.to_string()))?;
    writer.write_image_data(rgb).map_err(|e| Error::Chart(e.to_string()))?;
    writer.finish().map_err(|e| Error::Chart(e.to_string()))?;
    Ok(out)
}

/// Writes the chart to `path`: PNG (at [`PNG_SCALE`]) or SVG, by the file's extension.
pub fn save(chart: &Chart, path: &std::path::Path, width: u32, height: u32) -> Result<()> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let bytes = match ext.as_deref() {
        Some("png") => png(chart, width, height, PNG_SCALE)?,
        Some("svg") => svg(chart, width, height)?.into_bytes(),
        _ => {
            return Err(Error::InvalidSettings(format!("{}: charts are written as .png or .svg files", path.display())))
        }
    };
    crate::paths::write_atomically(path, &bytes)
}

#[cfg(test)]
mod tests;
