// Starting the threads of one walk or search where they run at once.
#pragma once

#include <functional>
#include <thread>

namespace brig::search {

// Starts a thread that runs `body`, placed on another of this process's CPUs
// than the caller's (when there is one); once it runs, it may use them all
// again. A new thread starts on its creator's CPU, and when the other CPUs
// have been idle the scheduler keeps it there until the creator sleeps or is
// preempted: ~1.7 ms after 50 ms of idle on this project's VMs, during which
// a walk's thread, which does not sleep, would work alone (as
// jail/steps/clone.h's move_to_other_cpu does for processes). Throws
// std::system_error as std::thread does.
std::thread start_thread_elsewhere(std::function<void()> body);

}  // namespace brig::search
