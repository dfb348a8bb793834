"""Greedy outputs of the numpy reference on the real models in ../shared, recorded once.

They match the texts in each model's SOURCE.md. test_reference_selfcheck.py recomputes them so
a change to ref_model.py that alters them is caught.
"""

# <|start_story|> + "Once upon a time,"
TINYSTORIES_PROMPT_TEXT = "Once upon a time,"
TINYSTORIES_PROMPT_IDS = [1, 80, 147, 201, 282, 57, 8]

# 60 greedy tokens, TinyStories-656K safetensors (F32). The Q8_0 GGUF gives the same 60.
TINYSTORIES_GREEDY_60 = [
    1137, 117, 1513, 101, 87, 1076, 1005, 361, 1377, 436, 1027, 1376, 1203, 615, 1377, 1257, 939, 306, 1307, 119,
    71, 759, 1251, 1450, 77, 122, 1377, 265, 2029, 1307, 119, 1368, 1287, 563, 1799, 163, 1103, 160, 1982, 276,
    357, 194, 110, 507, 71, 601, 218, 88, 165, 336, 1377, 1103, 1396, 1307, 119, 624, 1803, 94, 1005, 77,
]
TINYSTORIES_GREEDY_TEXT_START = "an ordinary cat named Kitty. Kitty loved to eat yummy food. One day, Kitty found a big box of fruits."

# 100 greedy tokens from BOS (id 1), stories260K.bin.
STORIES260K_GREEDY_100 = [
    403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337,
    410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352,
    266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415,
    426, 13, 438, 310, 439, 419, 357, 336, 432, 313, 438, 310, 432, 278, 316, 439, 419, 298, 414, 267,
    265, 282, 295, 433, 426, 436, 317, 286, 296, 418, 269, 279, 292, 416, 439, 413, 409, 416, 327, 263,
]
STORIES260K_GREEDY_TEXT_START = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
