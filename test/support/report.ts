/**
 * Prints a figure a test measured, as a plain line of the run's output
 * (`console.log` would be framed by Jest as a "● Console" block, which reads
 * like a failure).
 */
export function report(text: string): void {
  process.stdout.write(`${text}\n`);
}
