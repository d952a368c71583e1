# SPDX-License-Identifier: BSD-2-Clause
"""The LLDB side of the stepping tests: `steps-dump`, a command that records a stop.

Imported by steps_test.py's lldb sessions (`command script import`), after
`script steps_lldb.OUT = PATH`. `steps-dump [sframe]` appends one JSON line
to OUT: for every thread, the real frames lldb itself unwinds (through the SB
API: its inlined frames folded into the real frame that holds them, with the
pc of the innermost, which is where that frame is; the function the real
frame is in), and with `sframe`, the text, status and error of `sframe bt
all` run through the command interpreter as a user would. Nothing here
checks: the driver compares.
"""

import json

import lldb

OUT = None
MAX_FRAMES = 64


def function_name(frame):
    """The function a frame's code belongs to (for an inlined frame, the
    one it is inlined into), as lldb names it."""
    function = frame.GetFunction()
    if function.IsValid():
        return function.GetDisplayName() or function.GetName()
    symbol = frame.GetSymbol()
    if symbol.IsValid():
        return symbol.GetDisplayName() or symbol.GetName()
    return None


def real_frames(thread):
    """([{pc, cfa, module, name, inlined}] of @thread's real frames, innermost
    first; how many artificial frames lldb added).

    A real frame is the run of frames with one CFA: lldb's inlined frames
    share their real frame's CFA (and lldb may hide some of them, stepping
    into inlined calls "virtually"). Its pc is the innermost one's, where
    the real frame is. lldb's artificial frames (tail calls it rebuilds
    from DWARF call sites) are left out and counted."""
    out, group, artificial = [], [], 0
    frames = [f for f in thread][:MAX_FRAMES]
    for i, frame in enumerate(frames):
        if frame.IsArtificial():
            artificial += 1
            continue
        group.append(frame)
        nxt = next((f for f in frames[i + 1:] if not f.IsArtificial()), None)
        if nxt is not None and nxt.GetCFA() == frame.GetCFA():
            continue
        inner, real = group[0], group[-1]
        module = real.GetModule()
        out.append({'pc': inner.GetPC(), 'cfa': real.GetCFA(),
                    'module': module.GetFileSpec().GetFilename() if module.IsValid() else None,
                    'name': function_name(real), 'inlined': len(group) - 1,
                    'innermost': inner.GetFunctionName()})
        group = []
    return out, artificial


def steps_dump(debugger, command, exe_ctx, result, internal_dict):
    rec = {'args': command.strip()}
    target = debugger.GetSelectedTarget()
    process = target.GetProcess() if target.IsValid() else None
    if not process or not process.IsValid() or process.GetState() != lldb.eStateStopped:
        rec['running'] = False
    else:
        rec['running'] = True
        selected = process.GetSelectedThread()
        rec['thread'] = selected.GetIndexID()
        rec['selected_frame'] = selected.GetSelectedFrame().GetFrameID()
        rec['threads'] = {}
        for thread in process:
            frames, artificial = real_frames(thread)
            rec['threads'][str(thread.GetIndexID())] = {
                'frames': frames, 'artificial': artificial,
                'stop': thread.GetStopDescription(256) or ''}
        if 'sframe' in command.split():
            res = lldb.SBCommandReturnObject()
            debugger.GetCommandInterpreter().HandleCommand('sframe bt all', res)
            rec['sframe'] = {'ok': res.Succeeded(), 'output': res.GetOutput() or '',
                             'error': res.GetError() or ''}
    with open(OUT, 'a') as f:
        f.write(json.dumps(rec) + '\n')
    result.SetStatus(lldb.eReturnStatusSuccessFinishNoResult)


def __lldb_init_module(debugger, internal_dict):
    debugger.HandleCommand('command script add -f %s.steps_dump steps-dump' % __name__)
