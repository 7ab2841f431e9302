# One workflow at a time on a results directory (grokslt.workflow.lock): taken when jobs start (never on a
# dry run; spawned cluster jobs run without hooks), given back when the workflow ends.
from grokslt.workflow import lock

try:
    lock.check_results_directory(RESULTS)
except ValueError as error:
    raise WorkflowError(f"config: {error}") from None


def take_results_lock():
    try:
        lock.acquire(RESULTS)
    except ValueError as error:
        raise WorkflowError(str(error)) from None


def release_results_lock():
    lock.release(RESULTS)
