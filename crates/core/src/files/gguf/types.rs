//! ggml's tensor types and llama.cpp's file types, as GGUF headers number them: block layouts and
//! names.

/// (elements per block, bytes per block) of a ggml tensor type.
pub fn ggml_type_layout(t: u32) -> Option<(u64, u64)> {
    Some(match t {
        0 => (1, 4),           // F32
        1 | 30 => (1, 2),      // F16, BF16
        2 | 20 => (32, 18),    // Q4_0, IQ4_NL
        3 => (32, 20),         // Q4_1
        6 => (32, 22),         // Q5_0
        7 => (32, 24),         // Q5_1
        8 => (32, 34),         // Q8_0
        9 => (32, 36),         // Q8_1
        10 => (256, 84),       // Q2_K
        11 | 21 => (256, 110), // Q3_K, IQ3_S
        12 => (256, 144),      // Q4_K
        13 => (256, 176),      // Q5_K
        14 => (256, 210),      // Q6_K
        15 => (256, 292),      // Q8_K
        16 | 35 => (256, 66),  // IQ2_XXS, TQ2_0
        17 => (256, 74),       // IQ2_XS
        18 => (256, 98),       // IQ3_XXS
        19 => (256, 50),       // IQ1_S
        22 => (256, 82),       // IQ2_S
        23 => (256, 136),      // IQ4_XS
        24 => (1, 1),          // I8
        25 => (1, 2),          // I16
        26 => (1, 4),          // I32
        27 | 28 => (1, 8),     // I64, F64
        29 => (256, 56),       // IQ1_M
        34 => (256, 54),       // TQ1_0
        39 => (32, 17),        // MXFP4
        40 => (64, 36),        // NVFP4
        41 => (128, 18),       // Q1_0
        42 => (64, 18),        // Q2_0
        _ => return None,
    })
}

/// Name of a ggml tensor type.
pub fn ggml_type_name(t: u32) -> String {
    let name = match t {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        6 => "Q5_0",
        7 => "Q5_1",
        8 => "Q8_0",
        9 => "Q8_1",
        10 => "Q2_K",
        11 => "Q3_K",
        12 => "Q4_K",
        13 => "Q5_K",
        14 => "Q6_K",
        15 => "Q8_K",
        16 => "IQ2_XXS",
        17 => "IQ2_XS",
        18 => "IQ3_XXS",
        19 => "IQ1_S",
        20 => "IQ4_NL",
        21 => "IQ3_S",
        22 => "IQ2_S",
        23 => "IQ4_XS",
        24 => "I8",
        25 => "I16",
        26 => "I32",
        27 => "I64",
        28 => "F64",
        29 => "IQ1_M",
        30 => "BF16",
        34 => "TQ1_0",
        35 => "TQ2_0",
        39 => "MXFP4",
        other => return format!("type {other}"),
    };
    name.to_string()
}

/// Name of a `general.file_type` value (llama.cpp's `llama_ftype`).
pub fn file_type_name(ft: u64) -> Option<&'static str> {
    Some(match ft {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        _ => return None,
    })
}
