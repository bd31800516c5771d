# 诊断 | Diagnosis: name the most likely mistake of each exercise (visible probes only)
require_setup()
if GRADING:
    print(say("评分时跳过：诊断写在反馈里。", "Skipped while grading: the diagnosis is in the feedback."))
else:
    from tools.course.diagnosis import self_check

    findings = self_check(globals())
