# 对照参考库 | Check against the library: random workloads, the smallest disagreeing case
require_setup()
from tools.course.diagnosis import check_against_library  # the one place the library's simulator is called

mismatch = check_against_library(globals())
