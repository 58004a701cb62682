/* Entry of the bare-metal calibration image: a stack, then main. */
	.section .text.boot, "ax"
	.global _start
_start:
	ldr	x0, =__stack_top
	mov	sp, x0
	bl	main
1:	wfe
	b	1b
