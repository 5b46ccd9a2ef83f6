//! The window as a Mac user expects it: where it was and how big (kept in the data folder, put back
//! at the next start when it still fits on a screen), and an app menu (About, Settings… ⌘, , the
//! views, Edit for copy and paste, Window, Quit). On Linux and Windows the same shortcuts work in
//! the page (Ctrl+, and Ctrl+1…6); the menu is the macOS one only.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tauri::{Emitter, Manager, PhysicalPosition, PhysicalSize, Runtime, WebviewWindow, WindowEvent};

/// The event the page gets from a menu item: `preferences` or `view:<name>`.
pub const MENU_EVENT: &str = "draftlab://menu";

/// Where the window was: outer position and inner size in physical pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    #[serde(default)]
    pub maximized: bool,
}

/// A screen's area in physical pixels (x, y, width, height).
pub type Screen = (i32, i32, u32, u32);

impl Placement {
    /// The placement when it can be used as it is: a sane size, and its title-bar corner on one of
    /// `screens` (a screen unplugged since would put the window out of reach).
    pub fn usable(self, screens: &[Screen], min: (u32, u32)) -> Option<Placement> {
        let sized = (min.0..=16_384).contains(&self.width) && (min.1..=16_384).contains(&self.height);
        let on_screen = screens.iter().any(|&(sx, sy, sw, sh)| {
            let (right, bottom) = (i64::from(sx) + i64::from(sw), i64::from(sy) + i64::from(sh));
            // The top-left corner, 40 pixels in: enough to grab the window by its title bar.
            let (x, y) = (i64::from(self.x) + 40, i64::from(self.y) + 10);
            x >= i64::from(sx) && x < right && y >= i64::from(sy) && y < bottom
        });
        (sized && on_screen).then_some(self)
    }
}

fn file() -> PathBuf {
    draftlab_core::paths::data_dir().join("window.json")
}

/// The saved placement; none when there is none or it cannot be read (then the default is used).
pub fn load(path: &Path) -> Option<Placement> {
    let bytes = std::fs::read(path).ok().filter(|b| b.len() < 4096)?;
    serde_json::from_slice(&bytes).ok()
}

pub fn save(path: &Path, p: &Placement) {
    if let Ok(json) = serde_json::to_vec(p) {
        // Losing the window's place is not worth an error.
        let _ = draftlab_core::paths::write_atomically(path, &json);
    }
}

fn placement_of<R: Runtime>(w: &WebviewWindow<R>) -> Option<Placement> {
    let pos = w.outer_position().ok()?;
    let size = w.inner_size().ok()?;
    Some(Placement {
        x: pos.x,
        y: pos.y,
        width: size.width,
        height: size.height,
        maximized: w.is_maximized().unwrap_or(false),
    })
}

/// Puts the main window back where it was, and keeps its place when it moves or closes.
pub fn remember<R: Runtime>(w: &WebviewWindow<R>) {
    let screens: Vec<Screen> = w
        .available_monitors()
        .unwrap_or_default()
        .iter()
        .map(|m| (m.position().x, m.position().y, m.size().width, m.size().height))
        .collect();
    let scale = w.scale_factor().unwrap_or(1.0);
    let min = ((900.0 * scale) as u32, (600.0 * scale) as u32);
    if let Some(p) = load(&file()).and_then(|p| p.usable(&screens, min)) {
        let _ = w.set_size(PhysicalSize::new(p.width, p.height));
        let _ = w.set_position(PhysicalPosition::new(p.x, p.y));
        if p.maximized {
            let _ = w.maximize();
        }
    }
    let window = w.clone();
    w.on_window_event(move |e| {
        if matches!(e, WindowEvent::CloseRequested { .. } | WindowEvent::Moved(_) | WindowEvent::Resized(_)) {
            // A maximised window keeps the size it had before, to come back to.
            let before = load(&file());
            if let Some(mut p) = placement_of(&window) {
                if p.maximized {
                    if let Some(b) = before {
                        (p.x, p.y, p.width, p.height) = (b.x, b.y, b.width, b.height);
                    }
                }
                save(&file(), &p);
            }
        }
    });
}

/// The macOS app menu: About, Settings… (⌘,), the views (⌘1…⌘6), Edit (the text shortcuts the
/// page needs), Window, and Quit; its items reach the page as [`MENU_EVENT`].
#[cfg(target_os = "macos")]
pub fn menu<R: Runtime>(app: &tauri::AppHandle<R>) -> tauri::Result<tauri::menu::Menu<R>> {
    use tauri::menu::{AboutMetadata, Menu, MenuItem, PredefinedMenuItem, Submenu};
    let settings = MenuItem::with_id(app, "preferences", "Settings…", true, Some("CmdOrCtrl+,"))?;
    let about = PredefinedMenuItem::about(app, Some("About Draftlab"), Some(AboutMetadata::default()))?;
    let app_menu = Submenu::with_items(
        app,
        "Draftlab",
        true,
        &[
            &about,
            &PredefinedMenuItem::separator(app)?,
            &settings,
            &PredefinedMenuItem::separator(app)?,
            &PredefinedMenuItem::services(app, None)?,
            &PredefinedMenuItem::separator(app)?,
            &PredefinedMenuItem::hide(app, None)?,
            &PredefinedMenuItem::hide_others(app, None)?,
            &PredefinedMenuItem::show_all(app, None)?,
            &PredefinedMenuItem::separator(app)?,
            &PredefinedMenuItem::quit(app, None)?,
        ],
    )?;
    let edit = Submenu::with_items(
        app,
        "Edit",
        true,
        &[
            &PredefinedMenuItem::undo(app, None)?,
            &PredefinedMenuItem::redo(app, None)?,
            &PredefinedMenuItem::separator(app)?,
            &PredefinedMenuItem::cut(app, None)?,
            &PredefinedMenuItem::copy(app, None)?,
            &PredefinedMenuItem::paste(app, None)?,
            &PredefinedMenuItem::select_all(app, None)?,
        ],
    )?;
    let views: Vec<MenuItem<R>> = VIEWS
        .iter()
        .enumerate()
        .map(|(i, (id, label))| {
            MenuItem::with_id(app, format!("view:{id}"), *label, true, Some(format!("CmdOrCtrl+{}", i + 1).as_str()))
        })
        .collect::<tauri::Result<_>>()?;
    let view_refs: Vec<&dyn tauri::menu::IsMenuItem<R>> =
        views.iter().map(|v| v as &dyn tauri::menu::IsMenuItem<R>).collect();
    let view = Submenu::with_items(app, "View", true, &view_refs)?;
    let window = Submenu::with_items(
        app,
        "Window",
        true,
        &[
            &PredefinedMenuItem::minimize(app, None)?,
            &PredefinedMenuItem::maximize(app, None)?,
            &PredefinedMenuItem::separator(app)?,
            &PredefinedMenuItem::close_window(app, None)?,
        ],
    )?;
    Menu::with_items(app, &[&app_menu, &edit, &view, &window])
}

/// The views a menu item can show (the page's names and the menu's labels), in sidebar order.
pub const VIEWS: [(&str, &str); 6] = [
    ("run", "Run"),
    ("chat", "Chat"),
    ("serve", "Serve"),
    ("sweep", "Sweep"),
    ("models", "Models"),
    ("history", "History"),
];

/// Hands a menu item to the page (`preferences`, `view:run`, …); items the menu handles itself
/// (copy, quit…) never come here.
pub fn on_menu<R: Runtime>(app: &tauri::AppHandle<R>, id: &str) {
    let known =
        id == "preferences" || id.strip_prefix("view:").is_some_and(|v| VIEWS.iter().any(|(name, _)| *name == v));
    if known {
        if let Some(w) = app.get_webview_window("main") {
            let _ = w.emit(MENU_EVENT, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCREEN: Screen = (0, 0, 2560, 1600);

    #[test]
    fn a_placement_is_used_when_it_is_on_a_screen_and_sane() {
        let p = Placement { x: 100, y: 80, width: 1400, height: 900, maximized: false };
        assert_eq!(p.usable(&[SCREEN], (900, 600)), Some(p));
        // On a second screen to the left (negative coordinates, as macOS gives them).
        let left = Placement { x: -1800, ..p };
        assert_eq!(left.usable(&[SCREEN, (-1920, 0, 1920, 1080)], (900, 600)), Some(left));
        // That screen unplugged since: the window would be out of reach.
        assert_eq!(left.usable(&[SCREEN], (900, 600)), None);
        // Smaller than the window allows, or absurd.
        assert_eq!(Placement { width: 300, ..p }.usable(&[SCREEN], (900, 600)), None);
        assert_eq!(Placement { height: 1_000_000, ..p }.usable(&[SCREEN], (900, 600)), None);
        // No screens known: nothing to check against, so the default is used.
        assert_eq!(p.usable(&[], (900, 600)), None);
    }

    #[test]
    fn a_saved_placement_survives_a_round_trip_and_a_bad_file_is_ignored() {
        let dir = std::env::temp_dir().join(format!("draftlab-window-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("window.json");
        let p = Placement { x: 10, y: 20, width: 1300, height: 850, maximized: true };
        save(&path, &p);
        assert_eq!(load(&path), Some(p));
        std::fs::write(&path, b"{\"x\": \"left\"}").unwrap();
        assert_eq!(load(&path), None);
        std::fs::write(&path, vec![b' '; 10_000]).unwrap();
        assert_eq!(load(&path), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
