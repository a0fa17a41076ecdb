# ctxd hook for fish. Install with:  ctxd hook fish | source
# (in ~/.config/fish/config.fish). Reacts to $PWD at once and to edits of
# watched files before each prompt; keeps $status; safe to source twice.
# No process starts unless a project root, its watched files or the ctxd
# state changed. Builtins a function can shadow (printf, functions, source,
# path) are called as `builtin`, external commands as `command`, so a user's
# function or alias named like one cannot change what the hook does; Ctrl-C
# while the hook changes the environment waits until the change is complete
# (see __ctxd_hook).

set -g __ctxd_markers @CTXD_MARKERS@
set -g __ctxd_cmd @CTXD_COMMAND@
set -gx _CTXD_HOOK fish  # for `ctxd doctor` (a child process cannot see shell functions)

# Nearest directory at or above $PWD holding a marker -> $__ctxd_r ("" if
# none). Under $HOME the walk stops at $HOME (a marker above your home
# directory does not make a directory in it a project;
# ctxd.activation.detectors.ceiling). Every ancestor/marker candidate goes to
# one `path filter` (fish >= 3.5). The ancestors and their candidates are a
# pure function of $PWD and $HOME: they are kept between prompts, and a cd
# into a sibling or a child reuses them (see __ctxd_ancestors). Every command
# substitution here ends in `string split`/`collect`, so a newline in a name
# cannot split it.
builtin -q path 2>/dev/null; and set -g __ctxd_path_filter 1
set -g __ctxd_anc_for  # the $PWD and $HOME that __ctxd_anc/__ctxd_upc are for
set -g __ctxd_anc_home
set -g __ctxd_top ""
set -g __ctxd_up_for  # the parent whose children __ctxd_up_re matches
set -g __ctxd_up_re
set -g __ctxd_anc
set -g __ctxd_upc

# $PWD and its parents, nearest first, up to $HOME or / ("" stands for /) ->
# __ctxd_anc; every ancestor/marker pair of the parents (__ctxd_anc[2..])
# -> __ctxd_upc.
function __ctxd_ancestors
    if test "$__ctxd_anc_home" = "$HOME"
        test "$__ctxd_anc_for" = "$PWD"; and return 0
        if set -q __ctxd_anc[2]; and set -q __ctxd_path_filter; and test "$PWD" != "$__ctxd_top"
            # a cd into a sibling: the same parents, so the same __ctxd_upc
            # (a regex of the parent, kept while it stays: no command
            # substitution; `string collect` (fish >= 3.3, like `path`)
            # keeps a newline in it)
            if test "$__ctxd_up_for" != "$__ctxd_anc[2]"
                set -g __ctxd_up_re '^'(string escape --style=regex -- $__ctxd_anc[2] | string collect)'/[^/]+$'
                set -g __ctxd_up_for $__ctxd_anc[2]
            end
            if string match -qr -- $__ctxd_up_re $PWD
                set -g __ctxd_anc[1] $PWD
                set -g __ctxd_anc_for $PWD
                return 0
            end
        end
        if set -q __ctxd_anc[1]; and test "$PWD" != "$__ctxd_top"
            set -l parts (string split -r -m1 / -- $PWD)
            if test "$parts[1]" = "$__ctxd_anc_for"
                # a cd into a child: one ancestor more
                set -g __ctxd_upc $__ctxd_anc[1]/$__ctxd_markers $__ctxd_upc
                set -g __ctxd_anc $PWD $__ctxd_anc
                set -g __ctxd_anc_for $PWD
                return 0
            end
        end
    else
        set -g __ctxd_anc_home $HOME
        set -g __ctxd_top (string trim -r -c / -- "$HOME")
        set -g __ctxd_top (string join \n -- $__ctxd_top)  # one line per item: join them back
    end
    set -l d ""
    set -l anc ""
    for p in (string split -n / -- $PWD)
        set d $d/$p
        set -p anc $d
    end
    if test -n "$__ctxd_top"; and set -l i (contains -i -- $__ctxd_top $anc)
        set anc $anc[1..$i]
    end
    set -g __ctxd_anc $anc
    # in no particular order: only `path filter -q` reads it
    set -g __ctxd_upc $anc[2..-1]/$__ctxd_markers
    set -g __ctxd_anc_for $PWD
end

# Markerless verdicts (with `path`, fish >= 3.5): the last two directories
# whose walk found no marker, each with a `test` that holds while nothing
# changed: the stamp file written just before that walk is newer than every
# directory the walk looked in. Creating, removing or renaming a marker
# changes its directory's mtime, so the verdict falls; `-nt` is strict, so a
# change in the stamp's own clock tick (or second) counts as a change. A plain
# cd back into one of the two is then one `test` (a few stats) instead of a
# stat per directory and marker. Not caught: a marker that is a dangling
# symlink whose target appears (its directory does not change) is noticed
# once that verdict is dropped (a walk anywhere else, twice). The stamps are
# this shell's files in ctxd's private stamp directory, written only when it
# exists; stale ones go with the stamps' weekly prune.
set -g __ctxd_vdir @CTXD_STAMP_DIR@
set -g __ctxd_vfile $__ctxd_vdir/fish-walk.$hostname.$fish_pid
set -g __ctxd_v1 ""  # "$PWD\n$HOME" of the verdict
set -g __ctxd_v1_t   # its test
set -g __ctxd_v1_f ""  # its stamp
set -g __ctxd_v2 ""
set -g __ctxd_v2_t
set -g __ctxd_v2_f ""
set -g __ctxd_vspare ""  # the stamp the next walk writes
set -g __ctxd_vn 0
set -q __ctxd_path_filter; and set -g __ctxd_vspare $__ctxd_vfile.1; and set -g __ctxd_vn 1

function __ctxd_find_root
    test "$PWD"\n"$HOME" = "$__ctxd_v1"; and test $__ctxd_v1_t; and set -g __ctxd_r ""; and return 0
    test "$PWD"\n"$HOME" = "$__ctxd_v2"; and test $__ctxd_v2_t; and set -g __ctxd_r ""; and return 0
    # the stamp goes first, so that a marker created during the walk is not
    # older than it; only where the last walk found no project either (inside
    # a project every prompt walks, and finds its root)
    set -l f ""
    if test -z "$__ctxd_r" -a -n "$__ctxd_vspare" -a -d "$__ctxd_vdir" -a -w "$__ctxd_vdir"
        builtin true >$__ctxd_vspare; and set f $__ctxd_vspare
    end
    set -g __ctxd_r ""
    __ctxd_ancestors
    if set -q __ctxd_path_filter
        # the usual case, no project: one builtin call, one stat per candidate
        if not builtin path filter -q -- $__ctxd_anc[1]/$__ctxd_markers $__ctxd_upc
            test -n "$f"; and __ctxd_verdict_put $f
            return 0
        end
        for d in $__ctxd_anc
            if builtin path filter -q -- $d/$__ctxd_markers
                set __ctxd_r $d
                test -n "$d"; or set __ctxd_r /  # "" stands for /
                return 0
            end
        end
        return 0
    end
    for d in $__ctxd_anc
        for m in $__ctxd_markers
            if test -e "$d/$m"
                set __ctxd_r $d
                test -n "$d"; or set __ctxd_r /
                return 0
            end
        end
    end
end

# The walk that stamped $argv[1] found no marker at or above $PWD: its
# verdict becomes the first of the two, the first the second; the stamp of
# the one dropped is the next walk's.
function __ctxd_verdict_put --argument-names f
    set -l t
    for d in $__ctxd_anc
        test -n "$d"; or set d /
        set -a t $f -nt $d -a
    end
    set -e t[-1]
    set -l key "$PWD"\n"$HOME"
    if test "$key" = "$__ctxd_v1"
        # the same directory again (its verdict had fallen): the old stamp is free
        set -g __ctxd_vspare $__ctxd_v1_f
    else
        if test -n "$__ctxd_v2_f"
            set -g __ctxd_vspare $__ctxd_v2_f
        else
            set -g __ctxd_vn (math $__ctxd_vn + 1)
            set -g __ctxd_vspare $__ctxd_vfile.$__ctxd_vn
        end
        set -g __ctxd_v2 $__ctxd_v1
        set -g __ctxd_v2_t $__ctxd_v1_t
        set -g __ctxd_v2_f $__ctxd_v1_f
    end
    set -g __ctxd_v1 $key
    set -g __ctxd_v1_t $t
    set -g __ctxd_v1_f $f
end

# Status 0 when a watched file changed since the last export (or since the
# one whose CTXD_WATCH is $argv[1]). Runs at every prompt in a project: with
# `path` (fish >= 3.5) the existence checks are two builtin calls whatever the
# number of lines, and only the files that exist get a `test -nt`.
function __ctxd_watch_changed
    set -l w
    if set -q argv[1]
        set w $argv[1]
    else if set -q CTXD_WATCH
        set w "$CTXD_WATCH"
    end
    test -n "$w"; or return 1
    # "+path": existed at the export (must still exist, not newer than the
    # stamp); "-path": was absent (must still be absent). Watched paths are
    # absolute and never hold a newline. Split once per CTXD_WATCH value.
    if test "$w" != "$__ctxd_wsplit_for"
        set -l lines (string split \n -- $w)
        set -g __ctxd_wsplit_stamp $lines[1]
        set -e lines[1]
        set -g __ctxd_wsplit_plus (string replace -rf -- '^\+' '' $lines)
        set -g __ctxd_wsplit_minus (string replace -rf -- '^-' '' $lines)
        set -g __ctxd_wsplit_for $w
    end
    set -l stamp $__ctxd_wsplit_stamp
    set -l plus $__ctxd_wsplit_plus
    set -l minus $__ctxd_wsplit_minus
    if set -q __ctxd_path_filter
        set -q minus[1]; and builtin path filter -q -- $minus; and return 0
        set -q plus[1]; and builtin path filter -vq -- $plus; and return 0
    else
        for p in $minus
            test -e "$p"; and return 0
        end
        for p in $plus
            test -e "$p"; or return 0
        end
    end
    if test -n "$stamp"
        for p in $plus
            test "$p" -nt "$stamp"; and return 0
        end
    end
    return 1
end

function __ctxd_run
    # a new shell inherits CTXD_STATE but not the restore function: ask for it
    set -lx CTXD_NEED_RESTORE 1  # local to this function (works before fish 3.1's VAR=x cmd)
    builtin functions -q __ctxd_restore; and set CTXD_NEED_RESTORE 0
    set -l out (command $__ctxd_cmd export fish 2>/dev/null)
    set -l rc $status
    if test $rc -gt 128
        # killed by a signal (Ctrl-C): what it printed may be cut short, so
        # none of it runs and the environment stays exactly as it was
        builtin printf '%s\n' 'ctxd: interrupted; the environment is unchanged (ctxd tries again at the next prompt)' >&2
        return 1
    end
    if test -n "$out"
        builtin printf '%s\n' $out | builtin source
    end
    if test -n "$__ctxd_revisit_ok"  # ctxd says this code may be replayed
        test $rc -eq 0; and __ctxd_revisit_put "$__ctxd_r" "$__ctxd_revisit_ok" $out
        set -g __ctxd_revisit_ok ""
    end
    if test $rc -ne 0
        builtin functions -q __ctxd_restore; and __ctxd_restore
        builtin functions -e __ctxd_restore
        set -e -g CTXD_STATE
        set -e -g CTXD_WATCH
        if test $rc -eq 6
            set out (command $__ctxd_cmd export fish 2>/dev/null)
            and builtin printf '%s\n' $out | builtin source
        else if test -z "$out"
            builtin printf 'ctxd: the hook could not run ctxd (exit %s); project environment unloaded. Try: ctxd doctor\n' $rc >&2
        end
    end
    return 0
end

# The revisit cache (see ctxd/activation/revisit.py): per project root, the
# code ctxd printed on entering it, a test that the environment is the one it
# was printed for, and its CTXD_WATCH. Plain global variables (never
# exported: a new shell starts empty), at most 16 roots; entry i's code is the
# list __ctxd_rv_code_$i, one item per line ctxd printed, kept as it came
# (joining the lines into one item would cost a pipeline per entry).
set -g __ctxd_rv_root
set -g __ctxd_rv_test
set -g __ctxd_rv_watch

# root check code-line...
function __ctxd_revisit_put --argument-names root check
    test -n "$root"; or return 0
    set -l i (contains -i -- $root $__ctxd_rv_root)
    if test -z "$i"
        if set -q __ctxd_rv_root[16]
            set -g __ctxd_rv_root
            set -g __ctxd_rv_test
            set -g __ctxd_rv_watch
        end
        set -g -a __ctxd_rv_root $root
        set i (count $__ctxd_rv_root)
    end
    set -g __ctxd_rv_test[$i] $check
    set -g __ctxd_rv_code_$i $argv[3..-1]
    set -q CTXD_WATCH; and set -g __ctxd_rv_watch[$i] "$CTXD_WATCH"; or set -g __ctxd_rv_watch[$i] ""
end

# Status 0 when the project at $__ctxd_r was entered again without ctxd: its
# entry's test holds and no file it watches changed, so its code is what
# ctxd would print now.
function __ctxd_revisit
    set -l i (contains -i -- $__ctxd_r $__ctxd_rv_root); or return 1
    builtin printf '%s\n' $__ctxd_rv_test[$i] | builtin source; or return 1
    __ctxd_watch_changed $__ctxd_rv_watch[$i]; and return 1
    set -l code __ctxd_rv_code_$i
    builtin printf '%s\n' $$code | builtin source
    set -g __ctxd_revisit_ok ""
    return 0
end

# --no-walk: the root walk already ran for this $PWD (see __ctxd_on_prompt)
function __ctxd_hook
    set -l ctxd_status $status
    test "$argv[1]" = --no-walk; or __ctxd_find_root
    set -l r $__ctxd_r
    # Nothing to do when the root, the state and direnv's diff are what they
    # were after the last run (one comparison: neither CTXD_STATE nor
    # DIRENV_DIFF holds a newline, so the joined fields cannot alias) and no
    # watched file changed. A changed DIRENV_DIFF (direnv loaded, reloaded or
    # unloaded) asks ctxd too: a reload reverts PATH to direnv's snapshot,
    # which may predate ctxd's entries.
    if test "$r"\n"$CTXD_STATE"\n"$DIRENV_DIFF" = "$__ctxd_sig"
        if test -z "$CTXD_WATCH"; or not __ctxd_watch_changed
            return $ctxd_status
        end
    end
    set -l cur_state "$CTXD_STATE"
    set -l cur_direnv "$DIRENV_DIFF"
    # The environment changes from here on. Ctrl-C must not stop that halfway:
    # while a SIGINT handler exists, fish runs it instead of cancelling what
    # is running, so one that does nothing holds Ctrl-C until the change is
    # done (a user's own handlers stay and run too). ctxd itself can still be
    # interrupted, and __ctxd_run then changes nothing.
    function __ctxd_hold_sigint --on-signal SIGINT
    end
    set -l done 1
    if test -z "$r"; and test -n "$cur_state"; and test "$__ctxd_fast_leave" = 1
        and test "$cur_state" = "$__ctxd_seen"; and test "$PATH" = "$__ctxd_path"
        and test -z "$cur_direnv"; and builtin functions -q __ctxd_restore
        # Leaving for no project, nothing touched since our export, no on_leave
        # hook, no direnv diff (only ctxd itself can take its entries out of
        # direnv's snapshot): the restore function undoes it exactly, without
        # starting ctxd.
        __ctxd_restore
        builtin functions -e __ctxd_restore
        set -g __ctxd_fast_leave 0
    else if test -n "$r"; and test "$r" != "$__ctxd_root"; and __ctxd_revisit
        # back in a project entered before, nothing changed: applied without ctxd
    else if test -n "$r"; or test -n "$cur_state"
        __ctxd_run; or set done 0
    end
    if test $done = 1
        set -g __ctxd_root $r
        set -g __ctxd_path "$PATH"
        set -g __ctxd_seen "$CTXD_STATE"
        set -g __ctxd_sig "$r"\n"$CTXD_STATE"\n"$DIRENV_DIFF"
    end
    builtin functions -e __ctxd_hold_sigint
    return $ctxd_status
end

# A cd runs the root walk once: the prompt right after it reuses the walk's
# root (later prompts walk again, to notice a marker created meanwhile).
# fish saves $status around event handlers, so these need not keep it. The
# usual case is one `test`: the root, the state and direnv's diff are what the
# last run left ($__ctxd_sig, whose fields hold no newline) and nothing is
# watched (CTXD_WATCH empty: the trailing \n on both sides).
function __ctxd_on_pwd --on-variable PWD
    __ctxd_find_root
    set -g __ctxd_walked $PWD
    # the usual cd, between directories of no project: nothing to do
    test "$__ctxd_r"\n"$CTXD_STATE"\n"$DIRENV_DIFF"\n"$CTXD_WATCH" = "$__ctxd_sig"\n; and return
    __ctxd_hook --no-walk
end

function __ctxd_on_prompt --on-event fish_prompt
    if test "$__ctxd_walked" = "$PWD"
        set -g __ctxd_walked
        # nothing changed since the walk this command line's cd ran
        test "$__ctxd_r"\n"$CTXD_STATE"\n"$DIRENV_DIFF"\n"$CTXD_WATCH" = "$__ctxd_sig"\n; and return
        __ctxd_hook --no-walk
        return
    end
    set -g __ctxd_walked
    __ctxd_hook
end
