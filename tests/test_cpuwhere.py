"""loadtest/cpuwhere.py: perf samples sorted by where the CPU went (pure)."""

import sys

from devstack import REPO

sys.path.insert(0, str(REPO / "loadtest"))
from cpuwhere import KERNEL_OTHER, LUAJIT, PAGE_FAULTS, shares  # noqa: E402

# `perf script -F ip,sym,dso` of an nginx worker recorded with -g, cut down.
SCRIPT = """
\tffffffff813a2413 finish_task_switch.isra.0 ([kernel.kallsyms])
\tffffffff821f94c3 schedule ([kernel.kallsyms])
\tffffffff817318ca __x64_sys_epoll_wait ([kernel.kallsyms])
\tffffffff81000130 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])
\t          108ef3 epoll_wait (/usr/lib/x86_64-linux-gnu/libc.so.6)

\t           2bc86 ngx_strstrn (/usr/sbin/nginx)

\tffffffff8200ec5b tcp_sendmsg ([kernel.kallsyms])
\tffffffff816b826c do_writev ([kernel.kallsyms])
\tffffffff81000130 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])
\t           fde60 __GI___writev (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t    55d3138556c0 [unknown] ([unknown])

\tffffffff81ffcc69 do_page_mkwrite ([kernel.kallsyms])
\tffffffff81ffcf8f handle_mm_fault ([kernel.kallsyms])
\tffffffff81ffd42b asm_exc_page_fault ([kernel.kallsyms])
\t    7f0000001234 [unknown] ([unknown])

\t            db12 [unknown] (/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2.1.0)

\t    7f0000005678 [unknown] ([unknown])

\tffffffff81e2cd59 net_rx_action ([kernel.kallsyms])
\tffffffff816b65bc handle_softirqs ([kernel.kallsyms])

\t           1b2c3 __libc_recv (/usr/lib/x86_64-linux-gnu/libc.so.6)
"""


def test_each_sample_counts_once_where_it_was():
    parts = shares(SCRIPT)
    assert parts == {
        "kernel: epoll_wait": 1 / 8,
        "nginx": 1 / 8,
        "kernel: writev": 1 / 8,
        PAGE_FAULTS: 1 / 8,
        LUAJIT: 2 / 8,  # the library, and code in no file (its traces)
        KERNEL_OTHER: 1 / 8,
        "libc": 1 / 8,
    }


def test_nothing_recorded_is_no_shares():
    assert shares("") == {}
    assert shares("\n\n\n") == {}
