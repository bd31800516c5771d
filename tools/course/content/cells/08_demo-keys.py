# 规则 2 演示 | Rule 2: (position, content) keys vs whole-prefix keys
require_setup()
A, B, C, D = [1, 1], [2, 2], [3, 3], [4, 4]
requests = {"r1 = A B": A + B, "r2 = C D": C + D, "r3 = A D": A + D}
prefix_table = BlockKeys()  # interns (parent key, block tokens) -> small int
seen_prefix, seen_position = set(), set()
for label, tokens in requests.items():
    prefix_keys = prefix_table.of(tokens, 2)
    position_keys = [(i, tuple(tokens[2 * i:2 * i + 2])) for i in range(len(tokens) // 2)]
    hit_prefix = hit_position = 0
    while hit_prefix < len(prefix_keys) and prefix_keys[hit_prefix] in seen_prefix:
        hit_prefix += 1
    while hit_position < len(position_keys) and position_keys[hit_position] in seen_position:
        hit_position += 1
    print(f"{label}: prefix keys {prefix_keys} -> hit {hit_prefix} block(s) | "
          f"(position, content) keys {position_keys} -> hit {hit_position} block(s)")
    seen_prefix.update(prefix_keys)
    seen_position.update(position_keys)
print(say("r3 的第 2 个 block D 接在 A 后面，r2 的 D 接在 C 后面：KV 不同，只有前缀 key 能区分。",
          "r3's second block D follows A, r2's D follows C: their KV differs, and only prefix keys tell them apart."))
