"""The boot code a sandboxed Jupyter kernel starts with, instead of ``ipykernel_launcher``.

It caps the output the kernel sends (printed, displayed or a cell's result), per cell and for the whole notebook,
and starts the threads the kernel needs later while the process limit still allows it. Its own module because it
is data (Python source run with ``-c``), read by the launcher and by the tests that run its capping part.
"""

KERNEL_BOOT = """\
import sys
sys.modules["debugpy"] = None  # no debugger while grading: ipykernel runs without it, 0.1 s sooner
import json as _json
from ipykernel import displayhook as _displayhook, iostream, zmqshell
_per_cell = int(sys.argv.pop(1))
_book = {"left": int(sys.argv.pop(1)), "said": False}
_cell = {"id": None, "left": 0, "said": False}
_CELL_NOTE = "\\n[输出超过单元格上限，其余丢弃 | output limit reached: the rest of this cell's output is dropped]\\n"
_BOOK_NOTE = ("\\n[输出超过整个 notebook 的上限，之后的输出都丢弃 | notebook output limit reached: all further output "
              "is dropped]\\n")
def _allow(header, size, whole=False):
    # (characters the cell may send now, note to add or None). One execute request = one cell: each starts
    # with a fresh allowance; the notebook's total runs across cells. whole: all of it or nothing (rich output).
    cell = header.get("msg_id")
    if cell != _cell["id"]:
        _cell.update(id=cell, left=_per_cell, said=False)
    room = max(0, min(_cell["left"], _book["left"]))
    allowed = (size if size <= room else 0) if whole else min(size, room)
    _cell["left"] -= allowed
    _book["left"] -= allowed
    if allowed == size:
        return allowed, None
    _cell["left"] = 0
    note = None
    if _book["left"] <= 0 and not _book["said"]:
        _book["said"] = _cell["said"] = True
        note = _BOOK_NOTE
    elif not _cell["said"] and not _book["said"]:
        _cell["said"] = True
        note = _CELL_NOTE
    return allowed, note
def _size(bundle):
    return sum(len(v) if isinstance(v, (str, bytes)) else len(_json.dumps(v, default=str))
               for v in (bundle or {}).values())
_write = iostream.OutStream.write
def _capped(self, text):
    if not isinstance(text, str):
        return _write(self, text)
    allowed, note = _allow(self.parent_header, len(text))
    if allowed or note:
        _write(self, text[:allowed] + (note or ""))
    return len(text)
_publish = zmqshell.ZMQDisplayPublisher.publish
def _capped_publish(self, data, metadata=None, **kwargs):
    allowed, note = _allow(self.parent_header, _size(data), whole=True)
    if allowed or not data:
        return _publish(self, data, metadata, **kwargs)
    if note:
        _write(sys.stdout, note)
_result = _displayhook.ZMQShellDisplayHook.write_format_data
def _capped_result(self, format_dict, md_dict=None):
    allowed, note = _allow(self.parent_header, _size(format_dict), whole=True)
    if allowed or not format_dict:
        return _result(self, format_dict, md_dict)
    return _result(self, {"text/plain": (note or "").strip()}, {})
iostream.OutStream.write = _capped
zmqshell.ZMQDisplayPublisher.publish = _capped_publish
_displayhook.ZMQShellDisplayHook.write_format_data = _capped_result
try:  # pyzmq starts this thread on the first large message; threads count against the process limit, so a
    from zmq.utils.garbage import gc as _zmq_gc  # fork bomb would leave the kernel unable to send its output:
    _zmq_gc.start()  # start it now, before any student code runs
except Exception:
    pass
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""
