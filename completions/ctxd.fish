# fish completion for ctxd (generated: ctxd completion fish)
function _ctxd_completion
    set -l response (env _CTXD_COMPLETE=fish_complete COMP_WORDS=(commandline -cp) \
        COMP_CWORD=(commandline -t) ctxd)
    for completion in $response
        set -l metadata (string split -m 1 , -- $completion)
        switch $metadata[1]
            case dir
                __fish_complete_directories $metadata[2]
            case file
                __fish_complete_path $metadata[2]
            case plain
                printf '%s\n' $metadata[2]
        end
    end
end

complete --no-files --command ctxd --arguments '(_ctxd_completion)'
