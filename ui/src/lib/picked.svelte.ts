// A model chosen in one view for another (the Models view's "Use as target/draft" fills the Run view).
export const picked = $state<{ target: string | null; draft: string | null }>({ target: null, draft: null });
