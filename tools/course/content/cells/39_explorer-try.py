# 在这里试试 | Try it here (this cell is yours to edit), e.g.:
# explore(capacity_blocks=80, block_size=16, policy="seed")
