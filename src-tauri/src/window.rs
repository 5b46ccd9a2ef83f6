//! The windows as a Mac user expects them: the main one where it was and how big (kept in the data
//! folder, put back at the next start when it still fits on a screen), Settings in a window of its
//! own, and an app menu (Draftlab, File, Edit, Run, View, Window, Help). On Linux and Windows the
//! same shortcuts work in the page (Ctrl+, Ctrl+1…6, Ctrl+Enter, Esc); the menu is the macOS one
//! only.

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

/// One item of the app menu: a predefined one (copy, quit…, handled by the system), a separator,
/// or one of ours with its id, label and shortcut (see [`MENU`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Item {
    Ours(&'static str, &'static str, Option<&'static str>),
    Separator,
    About,
    Services,
    Hide,
    HideOthers,
    ShowAll,
    Quit,
    Undo,
    Redo,
    Cut,
    Copy,
    Paste,
    SelectAll,
    Minimize,
    Zoom,
    CloseWindow,
}

use Item::*;

/// The macOS app menu, as Mac apps lay it out: Draftlab (About, Settings… ⌘, , Quit), File (open
/// a target or a draft model, save the result card), Edit (the text shortcuts the page needs), Run
/// (both, either alone, Find Fastest, Stop ⌘.), View (the sidebar's views, ⌘1…⌘6), Window, and
/// Help. Our items reach the page as [`MENU_EVENT`] with their id (Settings… opens its window
/// here, see [`on_menu`]).
pub const MENU: &[(&str, &[Item])] = &[
    (
        "Draftlab",
        &[
            About,
            Separator,
            Ours("preferences", "Settings…", Some("CmdOrCtrl+,")),
            Separator,
            Services,
            Separator,
            Hide,
            HideOthers,
            ShowAll,
            Separator,
            Quit,
        ],
    ),
    (
        "File",
        &[
            Ours("file:target", "Open Target Model…", Some("CmdOrCtrl+O")),
            Ours("file:draft", "Open Draft Model…", Some("CmdOrCtrl+Shift+O")),
            Separator,
            Ours("file:card", "Save Result Card…", Some("CmdOrCtrl+S")),
            Separator,
            CloseWindow,
        ],
    ),
    ("Edit", &[Undo, Redo, Separator, Cut, Copy, Paste, SelectAll]),
    (
        "Run",
        &[
            Ours("run:both", "Run Both", Some("CmdOrCtrl+Enter")),
            Ours("run:baseline", "Run Baseline Only", Some("CmdOrCtrl+Shift+B")),
            Ours("run:speculative", "Run Speculative Only", Some("CmdOrCtrl+Shift+S")),
            Separator,
            Ours("run:tune", "Find Fastest Drafter", Some("CmdOrCtrl+Shift+F")),
            Separator,
            Ours("run:stop", "Stop", Some("CmdOrCtrl+.")),
        ],
    ),
    (
        "View",
        &[
            Ours("view:run", "Run", Some("CmdOrCtrl+1")),
            Ours("view:chat", "Chat", Some("CmdOrCtrl+2")),
            Ours("view:serve", "Serve", Some("CmdOrCtrl+3")),
            Ours("view:sweep", "Sweep", Some("CmdOrCtrl+4")),
            Ours("view:models", "Models", Some("CmdOrCtrl+5")),
            Ours("view:history", "History", Some("CmdOrCtrl+6")),
        ],
    ),
    ("Window", &[Minimize, Zoom]),
    ("Help", &[Ours("help:guide", "Draftlab Help", Some("CmdOrCtrl+?"))]),
];

/// The macOS app menu built from [`MENU`] (built on every platform, so its tests run anywhere;
/// only macOS shows it).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub fn menu<R: Runtime>(app: &tauri::AppHandle<R>) -> tauri::Result<tauri::menu::Menu<R>> {
    use tauri::menu::{AboutMetadata, IsMenuItem, Menu, MenuItemKind, PredefinedMenuItem as P, Submenu};
    let item = |i: &Item| -> tauri::Result<MenuItemKind<R>> {
        Ok(match *i {
            Ours(id, label, keys) => {
                MenuItemKind::MenuItem(tauri::menu::MenuItem::with_id(app, id, label, true, keys)?)
            }
            Separator => MenuItemKind::Predefined(P::separator(app)?),
            About => MenuItemKind::Predefined(P::about(app, Some("About Draftlab"), Some(AboutMetadata::default()))?),
            Services => MenuItemKind::Predefined(P::services(app, None)?),
            Hide => MenuItemKind::Predefined(P::hide(app, None)?),
            HideOthers => MenuItemKind::Predefined(P::hide_others(app, None)?),
            ShowAll => MenuItemKind::Predefined(P::show_all(app, None)?),
            Quit => MenuItemKind::Predefined(P::quit(app, None)?),
            Undo => MenuItemKind::Predefined(P::undo(app, None)?),
            Redo => MenuItemKind::Predefined(P::redo(app, None)?),
            Cut => MenuItemKind::Predefined(P::cut(app, None)?),
            Copy => MenuItemKind::Predefined(P::copy(app, None)?),
            Paste => MenuItemKind::Predefined(P::paste(app, None)?),
            SelectAll => MenuItemKind::Predefined(P::select_all(app, None)?),
            Minimize => MenuItemKind::Predefined(P::minimize(app, None)?),
            Zoom => MenuItemKind::Predefined(P::maximize(app, None)?),
            CloseWindow => MenuItemKind::Predefined(P::close_window(app, None)?),
        })
    };
    let mut submenus = Vec::new();
    for (title, items) in MENU {
        let built = items.iter().map(item).collect::<tauri::Result<Vec<_>>>()?;
        let refs: Vec<&dyn IsMenuItem<R>> = built.iter().map(|k| k as &dyn IsMenuItem<R>).collect();
        let sub = Submenu::with_items(app, *title, true, &refs)?;
        #[cfg(target_os = "macos")]
        if *title == "Help" {
            sub.set_as_help_menu_for_nsapp()?;
        }
        submenus.push(sub);
    }
    let refs: Vec<&dyn IsMenuItem<R>> = submenus.iter().map(|s| s as &dyn IsMenuItem<R>).collect();
    Menu::with_items(app, &refs)
}

/// The ids of our items in [`MENU`].
pub fn menu_ids() -> impl Iterator<Item = &'static str> {
    MENU.iter().flat_map(|(_, items)| items.iter()).filter_map(|i| match i {
        Ours(id, _, _) => Some(*id),
        _ => None,
    })
}

/// The Settings window's label (its page is the app's at `#settings`).
pub const SETTINGS: &str = "settings";

/// Opens the Settings window, or brings it to the front when it is open: a small window of its
/// own, as Mac apps' settings are (⌘, , the menu's Settings…, the sidebar's Settings).
pub fn open_settings<R: Runtime>(app: &tauri::AppHandle<R>) -> tauri::Result<()> {
    if let Some(w) = app.get_webview_window(SETTINGS) {
        w.unminimize()?;
        w.show()?;
        return w.set_focus();
    }
    let url = tauri::WebviewUrl::App("index.html#settings".into());
    let mut b = tauri::WebviewWindowBuilder::new(app, SETTINGS, url)
        .title("Settings")
        .inner_size(460.0, 300.0)
        .resizable(false)
        .minimizable(false)
        .maximizable(false);
    if let Some(main) = app.get_webview_window("main") {
        // In front of the main window, and centred over it.
        if let (Ok(pos), Ok(size), Ok(scale)) = (main.outer_position(), main.outer_size(), main.scale_factor()) {
            let (x, y) = (pos.x as f64 / scale, pos.y as f64 / scale);
            let (w, h) = (size.width as f64 / scale, size.height as f64 / scale);
            b = b.position(x + (w - 460.0) / 2.0, y + (h - 300.0) / 3.0);
        }
    }
    b.build().map(|_| ())
}

/// Handles a menu item of ours: Settings… opens its window, the rest go to the main window's page
/// (`view:run`, `run:both`, `file:target`, …); items the menu handles itself (copy, quit…) never
/// come here.
pub fn on_menu<R: Runtime>(app: &tauri::AppHandle<R>, id: &str) {
    if id == "preferences" {
        let _ = open_settings(app);
    } else if menu_ids().any(|known| known == id) {
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

    /// The menu's items have one id each and one shortcut each, its views are the sidebar's in its
    /// order (⌘1…⌘6), and every Mac menu is there with Stop on ⌘. and Settings on ⌘, .
    #[test]
    fn the_menu_has_every_mac_menu_one_id_and_one_shortcut_per_item() {
        let titles: Vec<&str> = MENU.iter().map(|(t, _)| *t).collect();
        assert_eq!(titles, ["Draftlab", "File", "Edit", "Run", "View", "Window", "Help"]);
        let ours: Vec<(&str, Option<&str>)> = MENU
            .iter()
            .flat_map(|(_, items)| items.iter())
            .filter_map(|i| match i {
                Ours(id, _, keys) => Some((*id, *keys)),
                _ => None,
            })
            .collect();
        let mut ids: Vec<&str> = ours.iter().map(|(id, _)| *id).collect();
        let mut keys: Vec<&str> = ours.iter().filter_map(|(_, k)| *k).collect();
        let (n_ids, n_keys) = (ids.len(), keys.len());
        ids.sort_unstable();
        ids.dedup();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!((ids.len(), keys.len()), (n_ids, n_keys), "an id or a shortcut is used twice");
        let views: Vec<String> = menu_ids().filter_map(|id| id.strip_prefix("view:").map(str::to_string)).collect();
        assert_eq!(views, ["run", "chat", "serve", "sweep", "models", "history"]);
        assert!(
            ours.contains(&("run:stop", Some("CmdOrCtrl+."))) && ours.contains(&("preferences", Some("CmdOrCtrl+,")))
        );
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
