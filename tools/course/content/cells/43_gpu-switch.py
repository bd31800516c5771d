# GPU 开关 | The switch (this cell is yours to edit)
RUN_REAL_BACKEND = False  # 改为 True 才启动 G0/G1；默认不下载模型、不占用 GPU。评分时整节跳过。
