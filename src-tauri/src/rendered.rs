//! Charts as the page gets them: the data (to export again as PNG or SVG) and the SVG (to show).

use draftlab_engine::measuring::charts::{self, Chart};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// A chart with its data (to export it again as PNG or SVG) and its SVG (to show it).
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
pub struct RenderedChart {
    pub chart: Chart,
    pub svg: String,
}

impl RenderedChart {
    pub fn of(chart: Chart) -> Result<Self, ApiError> {
        let svg = charts::svg(&chart, charts::WIDTH, charts::HEIGHT)?;
        Ok(RenderedChart { chart, svg })
    }
}
