//! The context switch: callee-saved registers, the frame pointer, the link
//! register and the stack pointer. The kernel is built for the soft-float target,
//! so there is no FP/SIMD state to save (see `boot.s`: FP/SIMD stays trapped).

use core::arch::global_asm;
use core::cell::UnsafeCell;

/// Where a new task starts: called by the trampoline with the two arguments
/// of [`Context::for_new_task`]; it never returns.
pub type TaskEntry = extern "C" fn(u64, u64) -> !;

/// A task's saved registers while it is switched out.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Context {
    /// x19..x28.
    callee_saved: [u64; 10],
    /// x29.
    frame_pointer: u64,
    /// x30: where `switch_context` returns to.
    link_register: u64,
    stack_pointer: u64,
}

const _: () = assert!(core::mem::size_of::<Context>() == 13 * 8);

impl Context {
    /// An empty context.
    pub const fn new() -> Self {
        Context {
            callee_saved: [0; 10],
            frame_pointer: 0,
            link_register: 0,
            stack_pointer: 0,
        }
    }

    /// A context that, when switched to, runs `task_trampoline` on `stack_top`
    /// with `x19 = argument0`, `x20 = argument1` and `x21 = entry`: the
    /// trampoline calls `entry(argument0, argument1)`. The entry is handed
    /// down by the caller (the tasks floor), so that this file names nothing
    /// above it.
    pub fn for_new_task(stack_top: u64, entry: TaskEntry, argument0: u64, argument1: u64) -> Self {
        let mut context = Context::new();
        context.callee_saved[0] = argument0;
        context.callee_saved[1] = argument1;
        context.callee_saved[2] = entry as *const () as u64;
        context.link_register = task_trampoline as *const () as u64;
        context.stack_pointer = stack_top & !0xf;
        context
    }
}

/// A task's saved context, shared between the CPU that switches the task out and
/// the CPU that later switches it in.
pub struct TaskContext(UnsafeCell<Context>);

// SAFETY: the context is written by `switch` on the CPU switching the task out and
// read by the CPU switching it in; the scheduler orders the two (the switch-in
// happens under the run-queue lock that the switch-out held until it finished,
// or after `on_cpu` is cleared with Release and read with Acquire), and
// `prepare_new_task` runs before the task is visible to any run queue.
unsafe impl Sync for TaskContext {}

impl TaskContext {
    /// An empty context.
    pub const fn new() -> Self {
        TaskContext(UnsafeCell::new(Context::new()))
    }

    /// Makes the context start a new task (see [`Context::for_new_task`]). Only
    /// for a task that no CPU runs and no run queue holds.
    pub fn prepare_new_task(
        &self,
        stack_top: u64,
        entry: TaskEntry,
        argument0: u64,
        argument1: u64,
    ) {
        let context = Context::for_new_task(stack_top, entry, argument0, argument1);
        // SAFETY: per this method's contract the task is not running, so no
        // `switch` uses this context concurrently.
        unsafe { *self.0.get() = context };
    }

    /// Saves the running registers into `self` and resumes `next`.
    ///
    /// # Safety
    /// `self` must be the context of the task running on this CPU, and `next` one
    /// saved by `switch` or prepared by `prepare_new_task`, whose stack is live and
    /// which no other CPU runs or is switching.
    pub unsafe fn switch(&self, next: &TaskContext) {
        // SAFETY: forwarded from this function's contract.
        unsafe { switch_context(self.0.get(), next.0.get()) };
    }
}

impl Default for TaskContext {
    fn default() -> Self {
        Self::new()
    }
}

global_asm!(
    r#"
.section .text.switch_context, "ax"
.global switch_context
switch_context:
    mov     x9, sp
    stp     x19, x20, [x0, #0]
    stp     x21, x22, [x0, #16]
    stp     x23, x24, [x0, #32]
    stp     x25, x26, [x0, #48]
    stp     x27, x28, [x0, #64]
    stp     x29, x30, [x0, #80]
    str     x9,       [x0, #96]
    ldp     x19, x20, [x1, #0]
    ldp     x21, x22, [x1, #16]
    ldp     x23, x24, [x1, #32]
    ldp     x25, x26, [x1, #48]
    ldp     x27, x28, [x1, #64]
    ldp     x29, x30, [x1, #80]
    ldr     x9,       [x1, #96]
    mov     sp, x9
    ret

.global task_trampoline
task_trampoline:
    mov     x29, #0
    mov     x0, x19
    mov     x1, x20
    blr     x21
    b       .
"#
);

unsafe extern "C" {
    /// Saves the running context into `*previous` and resumes `*next`.
    ///
    /// # Safety
    /// `previous` must be valid for writes and `next` must hold a context saved by
    /// this function or built by [`Context::for_new_task`] whose stack is live; no
    /// other core may use either context during the call.
    pub fn switch_context(previous: *mut Context, next: *const Context);
    fn task_trampoline();
}
