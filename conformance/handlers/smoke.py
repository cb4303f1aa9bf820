from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_step, StepContext
from aws_durable_execution_sdk_python.config import Duration

@durable_step
def greet(step_context: StepContext, name: str) -> str:
    return f"Hello, {name}!"

@durable_execution
def handler(event, context: DurableContext):
    r = context.step(greet(event))
    context.wait(Duration.from_seconds(1))
    return r
