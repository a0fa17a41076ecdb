"""The speed tricks of ctxd's hot paths, fenced in one package.

A cd into a project the shell has not entered before starts one Python process, the hook's
``ctxd export`` (export_entry.hook_main); every new shell loads the hook; AI tools and editors
run ``ctxd chat hook``, ``recall``, ``context`` and ``exec`` often. What the modules here do
beyond the plain way of doing those things is there only to make them faster:

| trick | where | saving | guarded by | remove when |
|---|---|---|---|---|
| JSON without the json module (which imports re) | minijson | first visit 0.22-0.43x | tests/test_state.py, tests/test_export_hot_path.py | json stops importing re, or the path needs re anyway |
| no interpreter teardown: os._exit once the output is flushed | export_entry.hook_main | first visit 0.05-0.10x | tests/test_export_hot_path.py | the path needs an atexit handler, a thread or a file closed at exit |
| the path's modules from one marshalled file instead of importlib | bundle | first visit 0.05-0.12x in 3 of 4 runs, none in 1 | tests/test_export_bundle.py | it stops showing: time a first visit with bundle.load_code returning "" |
| os built on posix alone (no os, posixpath, stat, _collections_abc) | posix_os | first visit 0.03-0.05x in 5 of 6 shell-runs | tests/test_posix_os.py, tests/test_export_hot_path.py | Python's start-up imports os anyway, or the path needs most of os |
| a new shell sources a copy of the hook, no process | startup_copy | shell start 12-14x | tests/e2e/test_e2e_startup.py | `ctxd hook` itself starts in a few milliseconds |
| no interpreter teardown after `chat hook`, `recall`, `context`: os._exit once the output is flushed | console_entry.run | 3-6 ms CPU a run (`ctxd recall`, the prompt hook and a rendering SessionStart at 700 messages, the same code through main and through run, 21-31 interleaved runs, load 4-5; docs/hooks.md) | tests/test_console_entry.py | the path needs an atexit handler, a thread or a file closed at exit |
| commands run often dispatched before click | console_entry, recall_entry, exec_entry | not on bench_activation's path: importing the click app costs 75-300 ms here (python -X importtime) | tests/test_packaging.py, tests/test_recall.py, tests/test_exec.py, tests/test_agent_env.py | the click app imports in a few milliseconds |

Saving: how much more ctxd's overhead over no hook was with the trick taken out, as a share of
direnv's overhead (the ratio benchmarks/bench_activation.py reports; the first visit was
0.48-0.86x with every trick in). One to four runs of bench_activation's first-visit and start-up
scenarios in bash, zsh and fish, with a session per variant sampled round-robin next to the
others in the same run: the machine was loaded (load average 7-12 on 2 cores), so only ratios
within a run compare, and two sessions of the same ctxd differed by up to 0.05x. Method and
figures: docs/benchmarks.md. Taken out for showing no saving: the garbage collector switched
off in the export process.

What each module may import of ctxd outside this package (tests/test_architecture.py holds
every module to its row; the packages a listed module sits in come with it):

| module | may import | for |
|---|---|---|
| export_entry | ctxd.shells, ctxd.activation.export, ctxd.activation.formats, ctxd.activation.target, ctxd.boundary, ctxd.termtext | the export; its errors |
| console_entry | ctxd.termtext, ctxd.integrations.agent_hooks, ctxd.cli | what it dispatches to |
| recall_entry | ctxd.memory.core, ctxd.memory.context.render_formats, ctxd.boundary | the answer; its errors |
| exec_entry | ctxd.activation.target, ctxd.boundary, ctxd.errors | the environment; its errors |
| bundle | ctxd, ctxd.shells, ctxd.paths, ctxd.activation.fileio | the module list, its path, writing it |
| startup_copy | ctxd, ctxd.shells.base, ctxd.activation.detectors, ctxd.activation.fileio | the hook text, writing it |
| posix_os | | |
| minijson | | |
"""
